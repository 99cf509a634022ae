import WebSocket from 'ws';
import type { BuiltServer } from './builtServer';
import { waitFor } from './waitFor';

/** The flag that opens a built server's inspector on a loopback port of the system's choosing (its address is printed on stderr). */
export const INSPECT_FLAG = '--inspect=127.0.0.1:0';

/** A built server's memory as the process itself reads it, after full collections: what it holds, not what awaits collection. */
export interface HeldMemory {
  readonly heapUsed: number;
  readonly external: number;
  readonly rss: number;
}

/**
 * Reads what a built server started with INSPECT_FLAG holds, through its inspector
 * (Chrome DevTools Protocol): two full collections (HeapProfiler.collectGarbage), then
 * `process.memoryUsage()`. A server's own /metrics cannot collect first, so its heap
 * figure mixes what is held with what is garbage.
 */
export async function heldMemory(server: BuiltServer): Promise<HeldMemory> {
  let url: string | undefined;
  await waitFor(() => (url = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1]) !== undefined, "the server's inspector address");
  const socket = new WebSocket(url!);
  await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
  let next = 0;
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      const onMessage = (data: WebSocket.RawData) => {
        const message = JSON.parse(String(data)) as { id?: number; result?: Record<string, unknown>; error?: unknown };
        if (message.id !== id) return;
        socket.off('message', onMessage);
        if (message.error) reject(new Error(`${method}: ${JSON.stringify(message.error)}`));
        else resolve(message.result ?? {});
      };
      socket.on('message', onMessage);
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const evaluated = (await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true })) as { result: { value: string } };
    const usage = JSON.parse(evaluated.result.value) as { heapUsed: number; external: number; arrayBuffers: number; rss: number };
    return { heapUsed: usage.heapUsed, external: usage.external, rss: usage.rss };
  } finally {
    socket.terminate();
  }
}
