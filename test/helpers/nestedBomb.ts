/**
 * The nested bomb (docs/limits.md, "Query limits"): 38 fields, 11 deep, 6 aliases, nesting connections
 * through the cycle `Location.shifts` → `Shift.location` → `Location.shifts`. It
 * passes the depth, alias and field-count limits; its answer multiplies by every page
 * size on the way down. `alias` names the six aliases (a variant must be refused too).
 */
export function nestedBomb(alias: (index: number) => string = (index) => `a${index}`): string {
  const [a, b, c, d, e, f] = [0, 1, 2, 3, 4, 5].map(alias);
  return `query Bomb {
  ${a}: locations {
    nodes {
      id nodeId name
      ${b}: shifts {
        nodes {
          id start
          location {
            id name
            ${c}: shifts {
              nodes {
                id nodeId
                location {
                  ${d}: shifts { nodes { id nodeId start end } }
                  ${e}: shifts { nodes { id nodeId start end } }
                }
              }
            }
          }
        }
      }
      ${f}: shifts { nodes { id nodeId start end location { id name } } }
    }
  }
}`;
}
