/**
 * Naive IP address arithmetic for the reference interpreter: addresses as BigInt, CIDR blocks by
 * comparing the leading bits. Written by hand on purpose: the runtime uses `node:net` (BlockList,
 * isIP), and the reference must not share its machinery (docs/architecture.md §2 invariant 7).
 */

/** A parsed address: IPv4 as 32 bits, IPv6 as 128 bits. */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly bits: bigint;
}

const V4_MAPPED_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96

/** Parses dotted-quad IPv4: four decimal parts 0-255, no leading zeros, nothing else. */
function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let out = 0n;
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out = (out << 8n) | BigInt(n);
  }
  return out;
}

/**
 * Parses IPv6 text: up to eight groups of 1-4 hex digits, at most one `::`, optionally a dotted
 * IPv4 in the last 32 bits. Zone ids (`%eth0`) and brackets are refused: neither is an address.
 */
function parseV6(text: string): bigint | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (s: string): bigint[] | undefined => {
    if (s === '') return [];
    const items = s.split(':');
    const out: bigint[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (i === items.length - 1 && item.includes('.')) {
        const v4 = parseV4(item);
        if (v4 === undefined) return undefined;
        out.push(v4 >> 16n, v4 & 0xffffn);
      } else {
        if (!/^[0-9A-Fa-f]{1,4}$/.test(item)) return undefined;
        out.push(BigInt(`0x${item}`));
      }
    }
    return out;
  };
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  // A dotted IPv4 is only allowed at the very end of the address.
  if (halves.length === 2 && halves[0]!.includes('.')) return undefined;
  let groups: bigint[];
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return undefined; // `::` stands for at least one group
    groups = [...head, ...new Array<bigint>(missing).fill(0n), ...tail];
  } else {
    if (head.length !== 8) return undefined;
    groups = head;
  }
  return groups.reduce((acc, g) => (acc << 16n) | g, 0n);
}

/**
 * Parses an IP address. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, `::ffff:a00:1`) is the
 * IPv4 address (rule book §5). Undefined for anything else (ports, brackets, zone ids, spaces).
 */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = parseV4(text);
  if (v4 !== undefined) return { family: 4, bits: v4 };
  const v6 = parseV6(text);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === 0xffffn) return { family: 4, bits: v6 & 0xffffffffn };
  return { family: 6, bits: v6 };
}

/** Writes an address back: dotted quad for IPv4; for IPv6 the full eight groups (for messages only). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return [24n, 16n, 8n, 0n].map((s) => String((ip.bits >> s) & 0xffn)).join('.');
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((ip.bits >> s) & 0xffffn).toString(16));
  return groups.join(':');
}

/**
 * Tells whether `ip` lies in the block `cidr` (`address/prefix`, as the plan stores it). An IPv4
 * address is also its IPv4-mapped IPv6 form, so `::ffff:0:0/96` and `::/0` contain every IPv4
 * address: one address, one answer, whichever notation the operator wrote. A block that does not
 * parse contains nothing (the compiler never emits one).
 */
export function cidrContains(cidr: string, ip: IpAddress): boolean {
  const slash = cidr.lastIndexOf('/');
  if (slash < 0) return false;
  const prefix = Number(cidr.slice(slash + 1));
  const raw = cidr.slice(0, slash);
  const v4 = parseV4(raw);
  const v6 = v4 === undefined ? parseV6(raw) : undefined;
  if (v4 !== undefined) {
    if (!(prefix >= 0 && prefix <= 32) || ip.family !== 4) return false;
    return samePrefix(v4, ip.bits, 32, prefix);
  }
  if (v6 === undefined || !(prefix >= 0 && prefix <= 128)) return false;
  const bits = ip.family === 6 ? ip.bits : V4_MAPPED_PREFIX | ip.bits;
  return samePrefix(v6, bits, 128, prefix);
}

function samePrefix(a: bigint, b: bigint, width: number, prefix: number): boolean {
  const shift = BigInt(width - prefix);
  return a >> shift === b >> shift;
}
