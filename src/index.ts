/**
 * The process entry (`node dist/index.js`). The compile cache comes first, so that
 * the server loaded after it, in a production build one bundled file (`dist/main.js`,
 * see `scripts/bundle/build.mjs`), is compiled from the cache on every start but the first.
 */
import './compileCache';
import { main } from './main';

main();
