/**
 * The one reading of an email address that policy, forwarded identity and sign-in share
 * (docs/policy.md "Emails"). An address counts only when it is an RFC 5322 addr-spec of the plain
 * form mail systems use: `local "@" domain` with exactly one `@`, ASCII only, at most 254 characters,
 * a dot-atom local part of at most 64 characters, and a domain of dot-separated host name labels
 * (letters, digits, `-` inside; 1 to 63 characters each). Quoted local parts, domain literals,
 * comments, whitespace and the obsolete forms are refused: no provider issues them, and each is a
 * way to hide a second `@` or a second domain (`"x@evil.example"@corp.example`).
 *
 * Hand-written: a scanner of a dozen lines, where a mail-parsing library would accept the display
 * names, groups and comments policy must refuse.
 */

/** An address that passed {@link parseEmail}. */
export interface ParsedEmail {
  /** The local part as given (case kept: RFC 5321 leaves its case to the receiving host). */
  readonly local: string;
  /** The domain, lower-cased (domains compare case-insensitively). */
  readonly domain: string;
  /** `local@domain` with the lower-cased domain: the form policy and upstreams see. */
  readonly address: string;
}

const MAX_ADDRESS = 254;
const MAX_LOCAL = 64;
const MAX_LABEL = 63;

/** RFC 5322 `atext`, as a table over ASCII. */
const ATEXT = new Uint8Array(128);
for (let c = 0x30; c <= 0x39; c++) ATEXT[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) ATEXT[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) ATEXT[c] = 1;
for (const ch of "!#$%&'*+-/=?^_`{|}~") ATEXT[ch.charCodeAt(0)] = 1;

/** Parses `text` as an email address (module comment); null when it is not one. */
export function parseEmail(text: string): ParsedEmail | null {
  if (text.length === 0 || text.length > MAX_ADDRESS) return null;
  const at = text.indexOf('@');
  if (at < 1 || at > MAX_LOCAL || text.indexOf('@', at + 1) >= 0) return null;
  if (!dotAtom(text, 0, at)) return null;
  const domain = text.slice(at + 1);
  if (!hostName(domain)) return null;
  const lower = domain.toLowerCase();
  return { local: text.slice(0, at), domain: lower, address: `${text.slice(0, at)}@${lower}` };
}

/**
 * The form of an identity's email that policy and upstreams see: the parsed address, or undefined
 * when there is no email or it is not an address (then it counts as no email at all).
 */
export function checkedEmail(email: string | undefined): string | undefined {
  return email === undefined ? undefined : parseEmail(email)?.address;
}

/** `text[from, to)` is `atext+ ("." atext+)*`. */
function dotAtom(text: string, from: number, to: number): boolean {
  let run = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) {
      if (run === 0) return false;
      run = 0;
    } else if (c < 128 && ATEXT[c] === 1) run++;
    else return false;
  }
  return run > 0;
}

/** Dot-separated labels of letters, digits and inner `-`, each 1 to 63 characters. */
function hostName(domain: string): boolean {
  let run = 0;
  for (let i = 0; i < domain.length; i++) {
    const c = domain.charCodeAt(i);
    if (c === 0x2e) {
      if (run === 0 || domain.charCodeAt(i - 1) === 0x2d) return false;
      run = 0;
    } else if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c === 0x2d && run > 0)) {
      if (++run > MAX_LABEL) return false;
    } else return false;
  }
  return run > 0 && domain.charCodeAt(domain.length - 1) !== 0x2d;
}
