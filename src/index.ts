/**
 * The process entry (`node dist/index.js`). The Node.js version check comes first (one
 * clear line on a Node that is too old), then the compile cache, so that the server
 * loaded after it, in a production build one bundled file (`dist/main.js`, see
 * `scripts/bundle/build.mjs`), is compiled from the cache on every start but the first.
 */
import './nodeVersion';
import './compileCache';
import { main } from './main';

main();
