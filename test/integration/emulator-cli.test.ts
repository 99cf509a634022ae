import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'undici';
import { loadConfig } from '../../src/config';
import { runEmulatorCli, type EmulatorCli } from '../../tools/emulator/main';
import { waitFor } from '../helpers/waitFor';

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

  it('edits its records every EMULATOR_EDIT_INTERVAL_SECONDS, as the demo does, so live updates can be watched against it', async () => {
    let output = '';
    cli = await runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,0', EMULATOR_EDIT_INTERVAL_SECONDS: '0.05' }, (text) => {
      output += text;
    });
    expect(output).toContain('Every 0.05 s one shift of each company is edited');
    const { emulator } = cli;
    const entry = (JSON.parse(readFileSync(cli.tenantsFile, 'utf8')) as Array<{ clientId: string; clientSecret: string; scope: string }>)[0]!;
    const token = await request(emulator.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: entry.clientId, client_secret: entry.clientSecret, scope: entry.scope }).toString(),
    });
    const { access_token: accessToken } = (await token.body.json()) as { access_token: string };
    const { api_base: apiBase } = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()) as { api_base: string };
    // The whole list as the upstream serves it, page after page.
    const shifts = async (): Promise<string> => {
      const pages: unknown[] = [];
      for (let next: string | null = `${apiBase}/api/public/v1/shifts/?page_size=100`; next; ) {
        const response = await request(next, { headers: { authorization: `Bearer ${accessToken}` } });
        expect(response.statusCode).toBe(200);
        const page = (await response.body.json()) as { data: unknown[]; next: string | null };
        pages.push(...page.data);
        next = page.next;
      }
      return JSON.stringify(pages);
    };
    const before = await shifts();
    await waitFor(async () => (await shifts()) !== before, 'a shift to change upstream');
  });

  it('says, without EMULATOR_EDIT_INTERVAL_SECONDS, that its data never changes and how to make it change', async () => {
    let output = '';
    cli = await runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,0' }, (text) => {
      output += text;
    });
    expect(output).toContain('The data never changes; EMULATOR_EDIT_INTERVAL_SECONDS=10');
  });

  it('names the variable when the configuration is bad', async () => {
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_EDIT_INTERVAL_SECONDS: 'often' }, () => undefined)).rejects.toThrow(/EMULATOR_EDIT_INTERVAL_SECONDS/);
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_EDIT_INTERVAL_SECONDS: '0' }, () => undefined)).rejects.toThrow(/EMULATOR_EDIT_INTERVAL_SECONDS/);
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: 'eighty' }, () => undefined)).rejects.toThrow(/EMULATOR_AUTH_PORT/);
    await expect(runEmulatorCli({ EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,99999' }, () => undefined)).rejects.toThrow(/EMULATOR_SHARD_PORTS/);
  });
});
