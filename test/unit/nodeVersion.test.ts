import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isSupportedNodeVersion, MINIMUM_NODE_VERSION } from '../../src/nodeVersion';

describe('the Node.js version check of node dist/index.js', () => {
  it('accepts 22.19.0 and later, and refuses what is older', () => {
    for (const version of ['22.19.0', 'v22.19.1', '22.20.0', '24.21.0', '25.0.0']) expect({ version, ok: isSupportedNodeVersion(version) }).toEqual({ version, ok: true });
    for (const version of ['20.20.2', 'v22.18.9', '22.15.0', '22.0.0', '18.19.0']) expect({ version, ok: isSupportedNodeVersion(version) }).toEqual({ version, ok: false });
  });

  it("is package.json's engines floor", () => {
    const { engines } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(engines.node).toBe(`>=${MINIMUM_NODE_VERSION}`);
  });
});
