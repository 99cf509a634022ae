/**
 * Keeps a label's values few: the first `max` distinct values seen are kept as they
 * are, every later one is reported as `other`. Prometheus keeps one series per label
 * value, so a label fed from requests (operation names, shard origins) must not grow
 * with what clients or tokens send.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly max: number,
    private readonly pattern: RegExp = /^[\w.:/[\]-]{1,100}$/,
  ) {}

  value(raw: string | null | undefined, missing = 'none'): string {
    if (raw === null || raw === undefined || raw === '') return missing;
    if (this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max || !this.pattern.test(raw)) return 'other';
    this.seen.add(raw);
    return raw;
  }
}
