/**
 * A test that writes to the console fails: output is either asserted on (through an
 * injected logger) or a bug. Secrets leaking into logs start as console noise.
 */
const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;

for (const method of methods) {
  jest.spyOn(console, method).mockImplementation((...args: unknown[]) => {
    throw new Error(`console.${method} called during a test: ${args.map(String).join(' ')}`);
  });
}
