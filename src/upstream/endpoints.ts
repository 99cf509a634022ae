import type { ListName } from './records';

/**
 * The list endpoints and what they need (upstream-api.md 4.2, 4.3; CONTRACT.md
 * section 4, "scopes per endpoint" and "max and default page_size").
 */
export const LIST_PATHS: { readonly [L in ListName]: string } = {
  locations: '/api/public/v1/locations/',
  shifts: '/api/public/v1/shifts/',
};

/**
 * The scope a list needs. The documentation names `shifts.read` for shifts and
 * none for locations, so locations are never refused for a scope we cannot know.
 */
export const REQUIRED_SCOPE: { readonly [L in ListName]: string | null } = {
  locations: null,
  shifts: 'shifts.read',
};

/**
 * The page size we always send. The documented call uses 100; we assume it is the
 * maximum. Every upstream page is fetched at this size, so a page reference inside
 * one of our cursors always denotes the same slice of the list.
 */
export const UPSTREAM_PAGE_SIZE = 100;
