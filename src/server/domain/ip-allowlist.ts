// IP allow-lists (an API's `ipWhitelist`, and keyguard's per-key one): entries are IPv4 or IPv6
// addresses or CIDR ranges (`203.0.113.0/24`, `2001:db8::/32`), checked when they are set (400
// naming the entry) and matched with node:net's BlockList when a key is verified.
import { BlockList, isIP } from "node:net";
import type { ValidationErrorDetail } from "../../protocol/types";

/** Why an entry is not an address or a CIDR range; undefined when it is one. */
export function allowListEntryProblem(entry: string): string | undefined {
  const slash = entry.indexOf("/");
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return "is not an IPv4 or IPv6 address or CIDR range";
  if (slash === -1) return undefined;
  const bits = entry.slice(slash + 1);
  const max = version === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return `has a prefix length that is not 0..${max}`;
  return undefined;
}

/** The 400 details of a list's bad entries, each named by its location (`body.ipWhitelist[2]`). */
export function checkAllowList(location: string, entries: readonly string[] | undefined): ValidationErrorDetail[] {
  if (entries === undefined) return [];
  return entries.flatMap((entry, i) => {
    const problem = allowListEntryProblem(entry);
    return problem === undefined
      ? []
      : [
          {
            location: `${location}[${i}]`,
            message: problem,
            fix: 'Use addresses or CIDR ranges, e.g. "203.0.113.7", "203.0.113.0/24" or "2001:db8::/32".',
          },
        ];
  });
}

/** BlockLists of the lists with ranges, by their entries: a verification does not build one each time. */
const lists = new Map<string, BlockList>();
const MAX_LISTS = 1000;

function blockListOf(entries: readonly string[]): BlockList {
  const id = entries.join(",");
  let list = lists.get(id);
  if (list !== undefined) return list;
  list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split("/") as [string, string | undefined];
    const type = isIP(address) === 4 ? "ipv4" : "ipv6";
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  if (lists.size >= MAX_LISTS) lists.clear();
  lists.set(id, list);
  return list;
}

/** Whether `ip` (the caller's address, as client-ip.ts gives it) is on the list; an unknown address never is. */
export function allowsAddress(entries: readonly string[], ip: string): boolean {
  if (entries.includes(ip)) return true;
  // Otherwise by value: a range, or an IPv6 address written another way.
  const version = isIP(ip);
  if (version === 0) return false;
  return blockListOf(entries).check(ip, version === 4 ? "ipv4" : "ipv6");
}

/** An entry as bits: its family, its address as a number, and its prefix length (an address: all of it). */
interface Range {
  version: 4 | 6;
  bits: number;
  value: bigint;
}

function rangeOf(entry: string): Range | undefined {
  if (allowListEntryProblem(entry) !== undefined) return undefined;
  const [address, prefix] = entry.split("/") as [string, string | undefined];
  const version = isIP(address) === 4 ? 4 : 6;
  const max = version === 4 ? 32 : 128;
  return { version, bits: prefix === undefined ? max : Number(prefix), value: version === 4 ? ipv4Value(address) : ipv6Value(address) };
}

function ipv4Value(address: string): bigint {
  return address.split(".").reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 address (as isIP accepts it: `::` shortening, a trailing dotted IPv4, a `%zone`) as 128 bits. */
function ipv6Value(address: string): bigint {
  let text = address.split("%")[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = ipv4Value(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined];
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return all.reduce((n, group) => (n << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/** `value` with all but its first `bits` bits (of a `width`-bit address) cleared. */
function network(value: bigint, bits: number, width: number): bigint {
  const host = BigInt(width - bits);
  return (value >> host) << host;
}

/**
 * Whether every address `entry` (an address or a CIDR range) allows lies inside one entry of
 * `fence`: same family, a prefix at least as long, and its network inside that entry. An entry
 * that is not an address or a range lies inside nothing.
 */
export function entryWithin(entry: string, fence: readonly string[]): boolean {
  const inner = rangeOf(entry);
  if (inner === undefined) return false;
  const width = inner.version === 4 ? 32 : 128;
  return fence.some((outerEntry) => {
    const outer = rangeOf(outerEntry);
    return (
      outer !== undefined &&
      outer.version === inner.version &&
      inner.bits >= outer.bits &&
      network(inner.value, outer.bits, width) === network(outer.value, outer.bits, width)
    );
  });
}
