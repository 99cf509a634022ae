import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The bundle (scripts/bundle/build.mjs, `graphqlInstanceOf`) compiles graphql-js's
 * `instanceOf` in its production form whatever NODE_ENV says: a server started as
 * `node dist/index.js` without NODE_ENV would otherwise run graphql-js's check for a
 * second copy of itself on every field of every answer.
 */
describe("the bundle's graphql-js", () => {
  const bundle = join(__dirname, '..', '..', 'dist', 'main.js');

  it('takes the production instanceOf, and holds one copy of graphql-js', () => {
    expect(existsSync(bundle)).toBe(true); // `npm run build` first
    const source = readFileSync(bundle, 'utf8');
    const flags = [...source.matchAll(/isProduction\s*=\s*([^,;]+)/g)].map((match) => match[1]);
    expect(flags).toEqual(['!0']);
  });
});
