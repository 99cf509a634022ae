/**
 * Page size rule for every list call (docs/upstream.md, "Page size");
 * list paths and scopes live in the resource modules (`resources/`).
 */

/**
 * The page size for walks that are not sized by a client's `first`: the entity index's
 * scans, filtered scans and `last` without `before`. The documented call uses 100; we
 * assume it is the maximum. A connection walk sends its own size (`first`, up to 100)
 * and keeps it from its first page to its last, so a page reference inside one of our
 * cursors always denotes the same slice of the list.
 */
export const UPSTREAM_PAGE_SIZE = 100;
