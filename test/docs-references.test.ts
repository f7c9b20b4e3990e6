/**
 * A clone of the repository is enough to follow every reference a comment makes
 * (docs/architecture.md §6 "Comments and references"): comments in compiler/, runtime/, cli/ and test/
 * never cite a document the repository does not hold or an issue number, every `docs/<page>.md` a
 * comment names exists with the section it names, every security row cited exists in
 * docs/security.md, and the invariant table of docs/architecture.md lists exactly the
 * `INVARIANT (name)` markers kept in runtime/. The proofs docs/security.md names are checked by
 * test/security/security-doc.test.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/** Every .ts file under `dir` (relative to the repository root). */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string): void => {
    for (const name of readdirSync(abs)) {
      const p = join(abs, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts')) out.push(relative(ROOT, p));
    }
  };
  walk(join(ROOT, dir));
  return out.sort();
}

interface Comment { file: string; line: number; text: string }

/** The comments of a TypeScript file, read with the compiler's own scanner (strings and regexes are not comments). */
function commentsOf(file: string): Comment[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  const comments: Comment[] = [];
  const lineOf = (pos: number): number => text.slice(0, pos).split('\n').length;
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      comments.push({ file, line: lineOf(scanner.getTokenStart()), text: scanner.getTokenText() });
    } else if (kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) {
      // A `/` where an expression may start is a regex literal: rescan it so its body is not read as code.
      const previous = scanner.getTokenStart();
      const rescanned = scanner.reScanSlashToken();
      if (rescanned !== ts.SyntaxKind.RegularExpressionLiteral) scanner.resetTokenState(previous + 1);
    } else if (kind === ts.SyntaxKind.TemplateHead || kind === ts.SyntaxKind.TemplateMiddle) {
      // Template spans: the scanner resumes the template at the matching `}`.
      let depth = 0;
      for (let k = scanner.scan(); k !== ts.SyntaxKind.EndOfFileToken; k = scanner.scan()) {
        if (k === ts.SyntaxKind.OpenBraceToken) depth++;
        else if (k === ts.SyntaxKind.CloseBraceToken) {
          if (depth === 0) {
            const t = scanner.reScanTemplateToken(false);
            if (t === ts.SyntaxKind.TemplateTail) break;
          } else depth--;
        }
      }
    }
  }
  return comments;
}

/**
 * Files whose header comment another change moves into docs/ (docs/authentication.md,
 * docs/forward-auth.md); until then their citations of outside documents are known and listed here.
 */
const OUTSIDE_DOCUMENT = /\b(?:SERVICE|DESIGN|SECURITY|STYLE)\.md\b/;
const SPEC_CITATION = /(?<![-\w`])spec(?:'s)?(?![-\w`])/i;
const ISSUE_NUMBER = /\bissues? ?#?\d+/i;

/** What a comment cites that a clone cannot follow, or undefined. */
export function outsideReference(text: string): string | undefined {
  return OUTSIDE_DOCUMENT.exec(text)?.[0] ?? SPEC_CITATION.exec(text)?.[0] ?? ISSUE_NUMBER.exec(text)?.[0];
}

/** The headings of a docs page, without their `#`s, `§N ` or `N. ` numbering. */
function headingsOf(page: string): { numbers: Set<string>; titles: string[] } {
  const numbers = new Set<string>();
  const titles: string[] = [];
  for (const line of readFileSync(join(ROOT, page), 'utf8').split('\n')) {
    const bold = /^(?:- )?\*\*([^*]+?)\.?\*\*/.exec(line);
    if (bold) titles.push(bold[1]!.toLowerCase());
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const numbered = /^(?:§\s?)?(\d+)\.?\s+(.*)$/.exec(m[1]!);
    if (numbered) {
      numbers.add(numbered[1]!);
      titles.push(numbered[2]!.toLowerCase());
    } else titles.push(m[1]!.toLowerCase());
  }
  return { numbers, titles };
}

/** Each `docs/<page>.md`, with the `§N` or `"Heading"` that follows it when there is one. */
const DOC_CITATION = /docs\/([\w./-]+?\.md)(?:(?: §\s?(\d+)(?:\.\d+)?(?:[–-]\d+)?)?(?: "([^"]+)")?)/g;

const SECURITY_ROWS = new Set(
  [...readFileSync(join(ROOT, 'docs/security.md'), 'utf8').matchAll(/^\| (S\d{2}) \|/gm)].map((m) => m[1]!),
);

const CITING_DIRS = ['compiler', 'runtime', 'cli'];
const citingFiles = CITING_DIRS.flatMap(sourceFiles);
const allComments = [...citingFiles, ...sourceFiles('test')].flatMap(commentsOf);

/** Where each broken docs/ citation in `comments` is, as `file:line: reason`. */
function brokenDocCitations(comments: readonly Comment[]): string[] {
  const broken: string[] = [];
  const pages = new Map<string, ReturnType<typeof headingsOf>>();
  for (const c of comments) {
    for (const m of c.text.replace(/\n\s*\*\s*/g, ' ').matchAll(DOC_CITATION)) {
      const page = `docs/${m[1]!}`;
      if (!existsSync(join(ROOT, page))) {
        broken.push(`${c.file}:${c.line}: ${page} does not exist`);
        continue;
      }
      if (!pages.has(page)) pages.set(page, headingsOf(page));
      const { numbers, titles } = pages.get(page)!;
      if (m[2] !== undefined && !numbers.has(m[2])) broken.push(`${c.file}:${c.line}: ${page} has no §${m[2]}`);
      const title = m[3]?.toLowerCase();
      if (title !== undefined && !titles.some((t) => t.startsWith(title))) {
        broken.push(`${c.file}:${c.line}: ${page} has no section "${m[3]!}"`);
      }
    }
  }
  return broken;
}

describe('references a clone can follow (docs/architecture.md §6)', () => {
  it('finds the citations it is meant to refuse', () => {
    expect(outsideReference(`see ${'DESIGN'}.md §2`)).toBe(`${'DESIGN'}.md`);
    expect(outsideReference('(spec 2.7 rule 5)')).toBe('spec');
    expect(outsideReference("the spec's form")).toBe("spec's");
    const issueCitation = ['issue', '13'].join(' ');
    expect(outsideReference(`(${issueCitation} §5)`)).toBe(issueCitation);
    expect(outsideReference('an RFC 5322 addr-spec of the plain form')).toBeUndefined();
    expect(outsideReference('(docs/decisions.md §1)')).toBeUndefined();
    expect(outsideReference('the request for `spec`')).toBeUndefined();
    expect(brokenDocCitations([{ file: 'x.ts', line: 1, text: '// docs/nowhere.md' }])).toHaveLength(1);
    expect(brokenDocCitations([{ file: 'x.ts', line: 1, text: '// docs/architecture.md §99' }])).toHaveLength(1);
    expect(brokenDocCitations([{ file: 'x.ts', line: 1, text: '// docs/running.md "No such heading"' }])).toHaveLength(1);
    expect(brokenDocCitations([{ file: 'x.ts', line: 1, text: '// docs/running.md "TLS"' }])).toEqual([]);
  });

  it('reads comments, not strings or code', () => {
    expect(citingFiles.length).toBeGreaterThan(100);
    expect(allComments.some((c) => c.text.includes('INVARIANT (one-gate)'))).toBe(true);
  });

  it('no comment in compiler/, runtime/, cli/ or test/ cites a document outside the repository or an issue number', () => {
    const found = allComments
      .flatMap((c) => {
        const hit = outsideReference(c.text);
        return hit === undefined ? [] : [`${c.file}:${c.line}: ${hit}`];
      });
    expect(found).toEqual([]);
  });

  it('no source file in compiler/, runtime/ or cli/ names a document kept outside the repository', () => {
    const found = citingFiles.filter((f) => OUTSIDE_DOCUMENT.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it('every docs/ page and section a comment cites exists', () => {
    expect(brokenDocCitations(allComments)).toEqual([]);
  });

  it('every security row a comment cites is a row of docs/security.md', () => {
    expect(SECURITY_ROWS.size).toBeGreaterThanOrEqual(50);
    const missing = allComments.flatMap((c) =>
      [...c.text.matchAll(/\bS(\d{2})\b/g)].filter((m) => !SECURITY_ROWS.has(`S${m[1]!}`)).map((m) => `${c.file}:${c.line}: S${m[1]!}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('docs/architecture.md lists the runtime invariants', () => {
  it('its invariant table names exactly the INVARIANT (name) markers in runtime/', () => {
    const markers = new Set(
      allComments.filter((c) => c.file.startsWith('runtime/')).flatMap((c) => [...c.text.matchAll(/INVARIANT \(([^)]+)\)/g)].map((m) => m[1]!)),
    );
    const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const listed = new Set([...doc.matchAll(/^\| `([^`]+)` \| runtime\//gm)].map((m) => m[1]!));
    expect(markers.size).toBeGreaterThan(20);
    expect([...markers].filter((n) => !listed.has(n)).sort()).toEqual([]);
    expect([...listed].filter((n) => !markers.has(n)).sort()).toEqual([]);
  });
});
