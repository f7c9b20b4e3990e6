import { describe, expect, it } from 'vitest';
import { cidrContains, formatIp, parseIp } from './ip.ts';

describe('reference IP arithmetic', () => {
  it('parses IPv4 strictly', () => {
    expect(parseIp('10.0.0.1')).toEqual({ family: 4, bits: 0x0a000001n });
    for (const bad of ['01.2.3.4', '1.2.3', '256.1.1.1', ' 1.2.3.4', '1.2.3.4:80', '', 'a']) expect(parseIp(bad), bad).toBeUndefined();
  });

  it('parses IPv6 with compression and embedded IPv4, refuses zone ids and brackets', () => {
    expect(parseIp('::1')).toEqual({ family: 6, bits: 1n });
    expect(parseIp('2001:db8::')?.bits).toBe(0x20010db8n << 96n);
    expect(parseIp('1:2:3:4:5:6:1.2.3.4')?.bits).toBe((0x0001000200030004n << 64n) | (0x00050006n << 32n) | 0x01020304n);
    for (const bad of ['[::1]', 'fe80::1%eth0', '1::2:3:4:5:6:7:8', '1:2:3:4:5:6:7', ':::', '1::2::3', '12345::']) expect(parseIp(bad), bad).toBeUndefined();
  });

  it('reads an IPv4-mapped IPv6 address as the IPv4 address (§5)', () => {
    expect(parseIp('::ffff:10.0.0.1')).toEqual({ family: 4, bits: 0x0a000001n });
    expect(parseIp('::ffff:a00:1')).toEqual({ family: 4, bits: 0x0a000001n });
    expect(formatIp(parseIp('::FFFF:10.0.0.1')!)).toBe('10.0.0.1');
  });

  it('matches CIDR blocks by their leading bits', () => {
    const ip = parseIp('10.1.2.3')!;
    expect(cidrContains('10.0.0.0/8', ip)).toBe(true);
    expect(cidrContains('10.1.2.3/32', ip)).toBe(true);
    expect(cidrContains('10.1.2.4/32', ip)).toBe(false);
    expect(cidrContains('0.0.0.0/0', ip)).toBe(true);
    expect(cidrContains('11.0.0.0/8', ip)).toBe(false);
    expect(cidrContains('2001:db8::/32', parseIp('2001:db8:1::5')!)).toBe(true);
    expect(cidrContains('2001:db8::/32', parseIp('2001:db9::5')!)).toBe(false);
    expect(cidrContains('10.0.0.0/8', parseIp('2001:db8::1')!)).toBe(false);
  });

  it('contains an IPv4 address in IPv6 blocks holding its mapped form', () => {
    const ip = parseIp('10.1.2.3')!;
    expect(cidrContains('::ffff:0:0/96', ip)).toBe(true);
    expect(cidrContains('::/0', ip)).toBe(true);
    expect(cidrContains('2001:db8::/32', ip)).toBe(false);
  });
});
