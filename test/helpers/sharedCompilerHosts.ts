import path from 'node:path';
import ts from 'typescript';

/**
 * Compiler hosts for several TypeScript programs of one test file, which parse each
 * declaration file once between them instead of once per program. Most of a program's
 * cost is parsing and binding lib.dom.d.ts, lib.es20xx and the node_modules types
 * (graphql, Apollo Client, React); a test file that checks several projects (several
 * module settings, a deliberately broken variant) reads the same ones each time.
 *
 * Only `.d.ts` files are shared, and only between programs that would parse them alike:
 * the cache key holds what a declaration file's parse depends on (its language version,
 * the module format its package.json implies, the JSDoc parsing mode). Binding does not
 * differ either: a declaration file is strict exactly when it is a module, and holds no
 * code whose reachability the options judge. TypeScript's language service shares
 * source files between programs the same way (its document registry). The projects'
 * own files are parsed by each program, with its options, as before.
 *
 * `extra` serves in-memory files (absolute path to text), which never touch the disk.
 */
export function sharedCompilerHosts(): (options: ts.CompilerOptions, extra?: ReadonlyMap<string, string>) => ts.CompilerHost {
  const declarations = new Map<string, ts.SourceFile>();
  return (options, extra = new Map()) => {
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    const getSourceFile = host.getSourceFile.bind(host);
    host.fileExists = (file) => extra.has(path.resolve(file)) || ts.sys.fileExists(file);
    host.readFile = (file) => extra.get(path.resolve(file)) ?? readFile(file);
    host.getSourceFile = (file, languageVersionOrOptions, onError, shouldCreate) => {
      const text = extra.get(path.resolve(file));
      if (text !== undefined) return ts.createSourceFile(file, text, languageVersionOrOptions, true);
      if (!/\.d\.[cm]?ts$/.test(file)) return getSourceFile(file, languageVersionOrOptions, onError, shouldCreate);
      const settings = typeof languageVersionOrOptions === 'object' ? languageVersionOrOptions : { languageVersion: languageVersionOrOptions };
      const key = [path.resolve(file), settings.languageVersion, settings.impliedNodeFormat, settings.jsDocParsingMode].join('|');
      const parsed = declarations.get(key) ?? getSourceFile(file, languageVersionOrOptions, onError, shouldCreate);
      if (parsed) declarations.set(key, parsed);
      return parsed;
    };
    return host;
  };
}
