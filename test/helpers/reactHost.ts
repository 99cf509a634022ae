import { createElement, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';

/**
 * A React hook run by React itself in Node, with no browser and no DOM library: React
 * DOM renders a component that calls the hook and renders nothing, into a stand-in
 * container. Rendering nothing, React never creates a DOM node; what it touches of the
 * browser is the container (its tag, its listeners), `window.event` (the priority of an
 * update) and `window.HTMLIFrameElement` (the focused element around a commit), given
 * here. That `window` stays for the rest of the test file (each file has globals of its
 * own): React's scheduler still runs work of an unmounted root later. Hooks, effects and
 * re-renders are React's own.
 */
export interface HookHost<T> {
  /** What the hook returned at its latest render (undefined before the first); throws what a render threw. */
  current(): T | undefined;
  /** How many times the hook has rendered. */
  renders(): number;
  unmount(): void;
}

export function renderHook<T>(hook: () => T, wrap: (children: ReactNode) => ReactNode = (children) => children): HookHost<T> {
  const global = globalThis as { window?: unknown };
  global.window ??= { event: undefined, HTMLIFrameElement: class {}, navigator: globalThis.navigator };
  const document = { nodeType: 9, addEventListener() {}, removeEventListener() {} };
  const container = {
    nodeType: 1,
    nodeName: 'DIV',
    tagName: 'DIV',
    namespaceURI: 'http://www.w3.org/1999/xhtml',
    ownerDocument: document,
    textContent: '',
    addEventListener() {},
    removeEventListener() {},
  };
  let latest: { value: T } | undefined;
  let count = 0;
  let failure: unknown;
  function Probe(): null {
    latest = { value: hook() };
    count += 1;
    return null;
  }
  const root = createRoot(container as unknown as Element, {
    onUncaughtError: (error) => {
      failure = error;
    },
  });
  root.render(wrap(createElement(Probe)));
  return {
    current() {
      if (failure) throw failure instanceof Error ? failure : new Error(String(failure));
      return latest?.value;
    },
    renders: () => count,
    unmount() {
      root.unmount();
    },
  };
}
