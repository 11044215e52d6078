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
