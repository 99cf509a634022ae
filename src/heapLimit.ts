import { getHeapStatistics } from 'node:v8';

/**
 * The heap limit the process runs with, stated at start (docs/operations.md, "Runtime
 * and heap"). Without `--max-old-space-size`, V8 sizes its old generation for the
 * host's memory, not the container's, and lets the heap grow far past what a 512Mi
 * container holds before collecting; every documented start line passes the flag, and
 * a start without it is warned about.
 */
export interface HeapLimit {
  /** V8's heap size limit, in MiB. */
  readonly limitMiB: number;
  /** Whether `--max-old-space-size` was given, on the command line or in NODE_OPTIONS. */
  readonly given: boolean;
}

/** The flags every documented start line passes (package.json's start, the Dockerfile's CMD). */
export const HEAP_FLAGS = '--max-semi-space-size=8 --max-old-space-size=256';

const OLD_SPACE_FLAG = /^--max[-_]old[-_]space[-_]size(=|$)/;

export function heapLimit(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env['NODE_OPTIONS']): HeapLimit {
  const flags = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  return {
    limitMiB: Math.round(getHeapStatistics().heap_size_limit / (1024 * 1024)),
    given: flags.some((flag) => OLD_SPACE_FLAG.test(flag)),
  };
}

/** The start-up warning when no heap limit was given. */
export function heapWarning(limit: HeapLimit): string | undefined {
  if (limit.given) return undefined;
  return `no --max-old-space-size: V8 sized the heap for this host (${limit.limitMiB} MiB), not for the container; start with node ${HEAP_FLAGS} dist/index.js (docs/operations.md, "Runtime and heap")`;
}
