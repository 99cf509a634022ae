import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { waitFor } from '../helpers/waitFor';

/**
 * `npm run emulator` as built: the emulator lives in tools/emulator/, outside src/, and
 * the build bundles it into dist/emulator/main.js (scripts/bundle/build.mjs), which the
 * command runs. test/integration/emulator-cli.test.ts tests what it prints from source;
 * this one, that the built file starts, prints the auth URL and demo credentials, hands
 * out a token for them, and stops on SIGTERM.
 */
const root = join(__dirname, '..', '..');
const entry = join(root, 'dist', 'emulator', 'main.js');

describe('npm run emulator, built', () => {
  it('runs dist/emulator/main.js, which prints the auth URL and demo credentials that get a token', async () => {
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts['emulator']).toBe('node dist/emulator/main.js');
    if (!existsSync(entry)) throw new Error('dist/emulator/main.js is missing: run `npm run build` first (scripts/test.sh does)');

    const child = spawn(process.execPath, [entry], { cwd: '/', env: { PATH: process.env.PATH ?? '', EMULATOR_AUTH_PORT: '0', EMULATOR_SHARD_PORTS: '0,0' } });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let out = '';
    child.stdout.on('data', (chunk) => (out += String(chunk)));
    try {
      await waitFor(() => out.includes('Ctrl+C stops the emulator.'), 'the emulator to print its banner', 15_000);
      const tokenUrl = /Token endpoint: +(\S+)/.exec(out)![1]!;
      expect(/Auth URL: +(\S+)/.exec(out)![1]).toBe(tokenUrl.replace(/\/identity\/o\/api\/token$/, ''));
      const clientId = /clientId: +(\S+)/.exec(out)![1]!;
      const clientSecret = /clientSecret: +(\S+)/.exec(out)![1]!;
      const response = await request(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
      });
      expect(response.statusCode).toBe(200);
      expect(((await response.body.json()) as { access_token?: unknown }).access_token).toEqual(expect.any(String));
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exit;
    }
  });
});
