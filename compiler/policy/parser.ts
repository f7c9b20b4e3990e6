/**
 * The grammar of the policy text syntax (chevrotain CstParser, error recovery on, so one parse
 * reports every syntax error it can get past):
 *
 * ```
 * policy    := (rule | ";")+
 * rule      := ("allow" | "deny") "if" orExpr
 * orExpr    := andExpr ("or" andExpr)*
 * andExpr   := notExpr ("and" notExpr)*
 * notExpr   := "not" notExpr | atom
 * atom      := "(" orExpr ")" | "true" | "false" | criterion
 * criterion := Identifier ("/" (Identifier | String))? matcher*
 * matcher   := Identifier value?
 * value     := String | "[" (String ("," String)*)? "]"
 * ```
 *
 * The grammar only shapes text; which criteria and matchers exist is checked by criteria.ts.
 */
import { CstParser, EOF, type CstNode, type IParserErrorMessageProvider, type ParserMethod, type IToken, type TokenType } from 'chevrotain';
import {
  ALL_TOKENS, Allow, And, Comma, Deny, False, Identifier, If, LBracket, LParen, Not, Or, RBracket, RParen, Semicolon, Slash, StringLiteral, True,
} from './tokens.ts';

function label(t: TokenType): string {
  return t === EOF ? 'end of text' : (t.LABEL ?? t.name);
}

function words(ws: readonly string[]): string {
  const u = [...new Set(ws)];
  return u.length <= 1 ? (u[0] ?? 'something else') : `${u.slice(0, -1).join(', ')} or ${u[u.length - 1]}`;
}

/** What each rule expects when none of its alternatives fits, in user terms. */
const EXPECTED_IN: Readonly<Record<string, string>> = {
  policy: '`allow` or `deny`',
  rule: '`allow` or `deny`',
  notExpr: 'a criterion, `not`, `true`, `false` or `(`',
  atom: 'a criterion, `not`, `true`, `false` or `(`',
  claimName: 'a claim name (a name or a string)',
  value: 'a string or a list of strings',
};

/**
 * Error messages hold only what was expected; parse-text.ts adds what was found (from the error's
 * token) when it reports SVC4001.
 */
const messages: IParserErrorMessageProvider = {
  buildMismatchTokenMessage: ({ expected }) => label(expected),
  buildNotAllInputParsedMessage: () => 'a new rule starting with `allow` or `deny`',
  buildNoViableAltMessage: ({ expectedPathsPerAlt, ruleName }) =>
    EXPECTED_IN[ruleName] ?? words(expectedPathsPerAlt.flatMap((alt) => alt.map((path) => label(path[0] ?? EOF)))),
  buildEarlyExitMessage: ({ expectedIterationPaths, ruleName }) =>
    EXPECTED_IN[ruleName] ?? words(expectedIterationPaths.map((path) => label(path[0] ?? EOF))),
};

/** The policy text parser. Stateful (chevrotain): set `input`, call `policy()`, read `errors`. */
export class PolicyParser extends CstParser {
  constructor() {
    super([...ALL_TOKENS], { recoveryEnabled: true, nodeLocationTracking: 'onlyOffset', errorMessageProvider: messages });
    this.performSelfAnalysis();
  }

  readonly policy = this.RULE('policy', () => {
    this.AT_LEAST_ONE(() => {
      this.OR([{ ALT: () => this.CONSUME(Semicolon) }, { ALT: () => this.SUBRULE(this.rule) }]);
    });
  });

  readonly rule = this.RULE('rule', () => {
    this.OR([{ ALT: () => this.CONSUME(Allow) }, { ALT: () => this.CONSUME(Deny) }]);
    this.CONSUME(If);
    this.SUBRULE(this.orExpr);
  });

  readonly orExpr = this.RULE('orExpr', () => {
    this.SUBRULE(this.andExpr);
    this.MANY(() => {
      this.CONSUME(Or);
      this.SUBRULE2(this.andExpr);
    });
  });

  readonly andExpr = this.RULE('andExpr', () => {
    this.SUBRULE(this.notExpr);
    this.MANY(() => {
      this.CONSUME(And);
      this.SUBRULE2(this.notExpr);
    });
  });

  readonly notExpr: ParserMethod<[], CstNode> = this.RULE('notExpr', () => {
    this.OR([
      {
        ALT: () => {
          this.CONSUME(Not);
          this.SUBRULE(this.notExpr);
        },
      },
      { ALT: () => this.SUBRULE(this.atom) },
    ]);
  });

  readonly atom = this.RULE('atom', () => {
    this.OR([
      {
        ALT: () => {
          this.CONSUME(LParen);
          this.SUBRULE(this.orExpr);
          this.CONSUME(RParen);
        },
      },
      { ALT: () => this.CONSUME(True) },
      { ALT: () => this.CONSUME(False) },
      { ALT: () => this.SUBRULE(this.criterion) },
    ]);
  });

  readonly criterion = this.RULE('criterion', () => {
    this.CONSUME(Identifier);
    this.OPTION(() => {
      this.CONSUME(Slash);
      this.SUBRULE(this.claimName);
    });
    this.MANY(() => this.SUBRULE(this.matcher));
  });

  readonly claimName = this.RULE('claimName', () => {
    this.OR([{ ALT: () => this.CONSUME(Identifier) }, { ALT: () => this.CONSUME(StringLiteral) }]);
  });

  readonly matcher = this.RULE('matcher', () => {
    this.CONSUME(Identifier);
    this.OPTION(() => this.SUBRULE(this.value));
  });

  readonly value = this.RULE('value', () => {
    this.OR([{ ALT: () => this.CONSUME(StringLiteral) }, { ALT: () => this.SUBRULE(this.list) }]);
  });

  readonly list = this.RULE('list', () => {
    this.CONSUME(LBracket);
    this.MANY_SEP({ SEP: Comma, DEF: () => this.CONSUME(StringLiteral) });
    this.CONSUME(RBracket);
  });
}

/** The one parser instance (construction runs chevrotain's grammar analysis, so it is done once). */
export const policyParser = new PolicyParser();

/** The offset just after a token, or `fallback` for chevrotain's virtual tokens (EOF, recovery inserts). */
export function tokenEnd(t: IToken, fallback: number): number {
  return Number.isFinite(t.endOffset) ? (t.endOffset as number) + 1 : fallback;
}
