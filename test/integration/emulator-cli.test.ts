import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'undici';
import { loadConfig } from '../../src/config';
import { runEmulatorCli, type EmulatorCli } from '../../src/emulator/main';

let cli: EmulatorCli | undefined;
afterEach(async () => {
  await cli?.stop();
  cli = undefined;
});

describe('npm run emulator', () => {
  it('prints the URLs and demo credentials, and writes a usable tenants file', async () => {
    let output = '';
    cli = await runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,0,0' }, (text) => {
      output += text;
    });
    const { emulator, tenantsFile } = cli;
    expect(emulator.shardUrls).toHaveLength(3);
    expect(output).toContain(emulator.authUrl);
    for (const url of emulator.shardUrls) expect(output).toContain(url);
    const entries = JSON.parse(readFileSync(tenantsFile, 'utf8')) as Array<{ tenantId: string; clientId: string; clientSecret: string; scope: string }>;
    expect(entries).toHaveLength(emulator.tenants.length);
    expect(output).toContain(JSON.stringify(entries));
    // The command it suggests configures the subgraph fully: a cursor secret too (none would
    // leave each process drawing its own, and is refused in production).
    const command = /^ {2}(WFS_AUTH_URL=.*) npm start$/m.exec(output)![1]!;
    const env = Object.fromEntries([...command.matchAll(/(\w+)=(\$\([^)]*\)|\S+)/g)].map((match) => [match[1]!, match[2]!]));
    expect(env).toEqual({ WFS_AUTH_URL: emulator.authUrl, WFS_TENANTS_FILE: tenantsFile, WFS_CURSOR_SECRET: '$(openssl rand -hex 32)' });
    const config = loadConfig({ ...env, WFS_CURSOR_SECRET: randomBytes(32).toString('hex') });
    expect(config.cursorSecretGenerated).toBe(false);
    for (const entry of entries) {
      expect(output).toContain(entry.tenantId);
      expect(output).toContain(entry.clientSecret);
      const response = await request(emulator.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: entry.clientId, client_secret: entry.clientSecret, scope: entry.scope }).toString(),
      });
      expect(response.statusCode).toBe(200);
      await response.body.dump();
    }
    await cli.stop();
    expect(existsSync(tenantsFile)).toBe(false);
  });

  it('names the variable when the configuration is bad', async () => {
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: 'eighty' }, () => undefined)).rejects.toThrow(/EMULATOR_AUTH_PORT/);
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,99999' }, () => undefined)).rejects.toThrow(/EMULATOR_SHARD_PORTS/);
  });
});
