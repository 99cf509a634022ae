/**
 * A signal that aborts after `ms` with a TimeoutError (so the work reads as timed out),
 * or with `within`'s reason when that aborts first; `done` disarms both once the work
 * is over. Unlike `AbortSignal.timeout`, nothing stays armed, with whatever still
 * listens to it, after the work it limits has ended.
 */
export function timeLimit(ms: number, within?: AbortSignal): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onWithin = () => controller.abort(within?.reason);
  if (within?.aborted) onWithin();
  else within?.addEventListener('abort', onWithin, { once: true });
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
  return {
    signal: controller.signal,
    done() {
      clearTimeout(timer);
      within?.removeEventListener('abort', onWithin);
    },
  };
}
