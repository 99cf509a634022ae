import { enableCompileCache } from 'node:module';

/**
 * Node's on-disk module compile cache (Node 22.1+): the second start of a process
 * reuses the V8 code cache of every module it loads instead of compiling them
 * again, which is most of a cold start. Imported first by `index.ts`, so it covers
 * everything loaded after it. NODE_COMPILE_CACHE, when set, names the directory
 * (Node reads it itself); NODE_DISABLE_COMPILE_CACHE=1 switches it off.
 */
if (typeof enableCompileCache === 'function' && !process.env.NODE_DISABLE_COMPILE_CACHE) enableCompileCache();
