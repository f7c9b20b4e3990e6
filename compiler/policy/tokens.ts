/**
 * Tokens of the policy text syntax (chevrotain lexer). Line breaks are white space: rules are told
 * apart by their leading `allow`/`deny`, and to-ast.ts checks that two rules are separated by a line
 * break or `;`. `#` starts a comment that runs to the end of the line.
 *
 * Keywords are reserved only in their exact lower-case spelling; matcher names (`is`, `in`, `has`,
 * `after`, ...) and criterion names are plain identifiers, checked by criteria.ts so that both policy
 * surfaces report unknown names the same way.
 */
import { Lexer, createToken, type TokenType } from 'chevrotain';

/** Spaces and line breaks, skipped. */
export const WhiteSpace = createToken({ name: 'WhiteSpace', pattern: /[ \t\r\n\f\v]+/, group: Lexer.SKIPPED });
/** `# ...` to the end of the line, skipped. */
export const Comment = createToken({ name: 'Comment', pattern: /#[^\n\r]*/, group: Lexer.SKIPPED });

/** A name: criterion, matcher or bare claim name. Dots and dashes are allowed after the first character. */
export const Identifier = createToken({ name: 'Identifier', pattern: /[A-Za-z_][A-Za-z0-9_.\-]*/, label: 'a name' });

const keyword = (word: string): TokenType =>
  createToken({ name: word[0]!.toUpperCase() + word.slice(1), pattern: word, longer_alt: Identifier, label: `\`${word}\`` });

/** The reserved words of the grammar (exact lower case; a longer name is an `Identifier`). */
export const Allow = keyword('allow');
export const Deny = keyword('deny');
export const If = keyword('if');
export const And = keyword('and');
export const Or = keyword('or');
export const Not = keyword('not');
export const True = keyword('true');
export const False = keyword('false');

/** The words the grammar reserves; the printer quotes claim names spelt like one. */
export const KEYWORDS: readonly string[] = ['allow', 'deny', 'if', 'and', 'or', 'not', 'true', 'false'];

/**
 * A double-quoted string with JSON escapes. The pattern accepts any backslash pair; to-ast.ts decodes
 * it and reports escapes JSON does not define.
 */
export const StringLiteral = createToken({ name: 'StringLiteral', pattern: /"(?:[^"\\\n\r]|\\[^\n\r])*"/, label: 'a string' });
/** A string missing its closing quote on its line; parse-text.ts reports it and drops it. */
export const UnterminatedString = createToken({ name: 'UnterminatedString', pattern: /"(?:[^"\\\n\r]|\\[^\n\r])*\\?/, label: 'an unterminated string' });

/** Punctuation: `/` after `claim`, parentheses, list brackets and commas, `;` between rules. */
export const Slash = createToken({ name: 'Slash', pattern: '/', label: '`/`' });
export const LParen = createToken({ name: 'LParen', pattern: '(', label: '`(`' });
export const RParen = createToken({ name: 'RParen', pattern: ')', label: '`)`' });
export const LBracket = createToken({ name: 'LBracket', pattern: '[', label: '`[`' });
export const RBracket = createToken({ name: 'RBracket', pattern: ']', label: '`]`' });
export const Comma = createToken({ name: 'Comma', pattern: ',', label: '`,`' });
export const Semicolon = createToken({ name: 'Semicolon', pattern: ';', label: '`;`' });

/** Every token type, in lexing priority order (keywords before `Identifier`). */
export const ALL_TOKENS: readonly TokenType[] = [
  WhiteSpace, Comment,
  Allow, Deny, If, And, Or, Not, True, False,
  Identifier,
  StringLiteral, UnterminatedString,
  Slash, LParen, RParen, LBracket, RBracket, Comma, Semicolon,
];

/** The policy lexer; built once (chevrotain analyses the token set at construction). */
export const policyLexer = new Lexer([...ALL_TOKENS], { positionTracking: 'full' });
