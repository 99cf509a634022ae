import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Comments cite the repository's own documents by heading: docs/upstream.md for the
 * upstream's documented behaviour and our assumptions, the README and the other pages
 * of docs/ for what the subgraph promises. Documents kept outside the repository and
 * issue numbers cannot be read by the next person, so citing them fails here, as does
 * a citation of a heading that does not exist (docs/development.md, "Conventions").
 */

const repoRoot = path.resolve(__dirname, '../..');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', 'coverage', 'results']);
const TEXT_FILE = /\.(?:[cm]?[jt]s|md|graphql|ya?ml|toml|json|sh)$|^Dockerfile$/;

/** Every text file of the repository (dot-directories, dependencies and build output excepted). */
function repositoryFiles(directory = repoRoot): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.')) return [];
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRECTORIES.has(entry.name) ? [] : repositoryFiles(full);
    return TEXT_FILE.test(entry.name) && entry.name !== 'package-lock.json' ? [full] : [];
  });
}

/** The headings of a markdown file, without `#`s and backticks. */
function headings(file: string): Set<string> {
  const text = readFileSync(path.join(repoRoot, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((match) => match[1]!.replace(/`/g, '')));
}

const files = repositoryFiles();
const relative = (file: string) => path.relative(repoRoot, file);

// Spelled in pieces, so this file does not cite them itself.
const OUTSIDE_DOCUMENTS = new RegExp(['CONTRACT', 'upstream-api'].map((name) => `\\b${name}\\.md\\b`).join('|'));

/**
 * A page of docs/ or the top README (`README` or `README.md`, not bench's), a comma, then
 * the heading in double quotes (perhaps on the next comment line).
 */
const CITATION = /(?<![\w./-])(docs\/[\w-]+\.md|README(?:\.md)?),\s+(?:(?:\*|\/\/)\s+)?"([^"\n]+)"/g;

/** "issue 17", "issues 7 and 11": numbers of a tracker the repository does not carry. */
const ISSUE_NUMBER = /\bissues? #?\d+/i;

describe('citations in the repository', () => {
  it('finds the files it checks', () => {
    expect(files.map(relative)).toEqual(expect.arrayContaining(['README.md', 'docs/upstream.md', 'src/upstream/pageReference.ts', 'test/unit/docCitations.test.ts']));
  });

  it('cites no document kept outside the repository', () => {
    const offending = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (OUTSIDE_DOCUMENTS.test(line) ? [`${relative(file)}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(offending).toEqual([]);
  });

  it('cites no issue number: a reader cites the page of docs/ or the test instead', () => {
    const offending = files
      .filter((file) => file !== __filename)
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, index) => (ISSUE_NUMBER.test(line) ? [`${relative(file)}:${index + 1}: ${line.trim()}`] : [])),
      );
    expect(offending).toEqual([]);
  });

  it('names a heading that exists in the document it cites', () => {
    const known = new Map<string, Set<string>>();
    const headingsOf = (document: string) => {
      if (!known.has(document)) known.set(document, existsSync(path.join(repoRoot, document)) ? headings(document) : new Set());
      return known.get(document)!;
    };
    const citations = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(CITATION)].map((match) => ({
        where: relative(file),
        document: match[1]!.startsWith('docs/') ? match[1]! : 'README.md',
        heading: match[2]!.replace(/`/g, ''),
      })),
    );
    expect(citations.filter((citation) => citation.document === 'docs/upstream.md').length).toBeGreaterThanOrEqual(20);
    expect(citations.filter((citation) => !headingsOf(citation.document).has(citation.heading))).toEqual([]);
  });
});
