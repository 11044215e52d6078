// The permission-query language: `a.read AND (b.write OR admin)`. One parser and evaluator,
// used by the local key service's verifyKey and by the middleware's guards.
//
// Grammar (AND binds tighter than OR; operators are case-insensitive whole words):
//   query := or
//   or    := and ( "OR" and )*
//   and   := atom ( "AND" atom )*
//   atom  := permission | "(" or ")"
//   permission := [A-Za-z0-9._\-*:/]+   (matched literally: `docs.*` is not a wildcard)

export type PermissionQuery =
  { type: "permission"; value: string } | { type: "and"; operands: PermissionQuery[] } | { type: "or"; operands: PermissionQuery[] };

/** Longest query accepted, in characters. */
export const MAX_PERMISSION_QUERY_LENGTH = 1000;
/** Deepest nesting of parentheses accepted. */
const MAX_PERMISSION_QUERY_DEPTH = 32;

/** A query that does not follow the grammar. `position` is the 0-based offset of the problem. */
export class PermissionQuerySyntaxError extends Error {
  readonly code = "permissions_query_syntax_error";
  readonly position: number;
  readonly query: string;

  constructor(message: string, query: string, position: number) {
    super(message);
    this.name = "PermissionQuerySyntaxError";
    this.query = query;
    this.position = position;
  }
}

type Token = { kind: "perm"; value: string; at: number } | { kind: "and" | "or" | "(" | ")"; at: number } | { kind: "end"; at: number };

const IDENT = /[A-Za-z0-9._\-*:/]/;

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const ch = query[i]!;
    if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
      i++;
    } else if (ch === "(" || ch === ")") {
      tokens.push({ kind: ch, at: i });
      i++;
    } else if (IDENT.test(ch)) {
      const start = i;
      while (i < query.length && IDENT.test(query[i]!)) i++;
      const word = query.slice(start, i);
      const upper = word.toUpperCase();
      if (upper === "AND") tokens.push({ kind: "and", at: start });
      else if (upper === "OR") tokens.push({ kind: "or", at: start });
      else tokens.push({ kind: "perm", value: word, at: start });
    } else {
      throw new PermissionQuerySyntaxError(
        `unexpected character ${JSON.stringify(ch)} at position ${i}; permission names use A-Z a-z 0-9 . _ - * : /`,
        query,
        i,
      );
    }
  }
  tokens.push({ kind: "end", at: query.length });
  return tokens;
}

function describe(token: Token): string {
  switch (token.kind) {
    case "end":
      return "end of query";
    case "perm":
      return `a permission name of ${token.value.length} characters`;
    case "and":
    case "or":
      return token.kind.toUpperCase();
    default:
      return `"${token.kind}"`;
  }
}

/**
 * Parses a permission query. Throws {@link PermissionQuerySyntaxError} with the position of
 * the first problem for an empty, over-long, over-nested or malformed query.
 */
export function parsePermissionQuery(query: string): PermissionQuery {
  if (typeof query !== "string") {
    throw new PermissionQuerySyntaxError("permission query must be a string", String(query), 0);
  }
  if (query.length > MAX_PERMISSION_QUERY_LENGTH) {
    throw new PermissionQuerySyntaxError(
      `permission query is ${query.length} characters; the limit is ${MAX_PERMISSION_QUERY_LENGTH}`,
      query,
      MAX_PERMISSION_QUERY_LENGTH,
    );
  }
  const tokens = tokenize(query);
  let pos = 0;
  const peek = () => tokens[pos]!;
  const fail = (expected: string): never => {
    const t = peek();
    throw new PermissionQuerySyntaxError(`expected ${expected} at position ${t.at}, found ${describe(t)}`, query, t.at);
  };

  const parseOr = (depth: number): PermissionQuery => {
    const operands = [parseAnd(depth)];
    while (peek().kind === "or") {
      pos++;
      operands.push(parseAnd(depth));
    }
    return operands.length === 1 ? operands[0]! : { type: "or", operands };
  };
  const parseAnd = (depth: number): PermissionQuery => {
    const operands = [parseAtom(depth)];
    while (peek().kind === "and") {
      pos++;
      operands.push(parseAtom(depth));
    }
    return operands.length === 1 ? operands[0]! : { type: "and", operands };
  };
  const parseAtom = (depth: number): PermissionQuery => {
    const t = peek();
    if (t.kind === "perm") {
      pos++;
      return { type: "permission", value: t.value };
    }
    if (t.kind === "(") {
      if (depth >= MAX_PERMISSION_QUERY_DEPTH) {
        throw new PermissionQuerySyntaxError(`permission query nests deeper than ${MAX_PERMISSION_QUERY_DEPTH} levels`, query, t.at);
      }
      pos++;
      const inner = parseOr(depth + 1);
      if (peek().kind !== ")") fail('")"');
      pos++;
      return inner;
    }
    return fail('a permission or "("');
  };

  const tree = parseOr(0);
  if (peek().kind !== "end") fail("AND, OR or end of query");
  return tree;
}

/** Whether a set of granted permissions satisfies a parsed query. Exact string matches only. */
export function evaluatePermissionQuery(query: PermissionQuery, granted: ReadonlySet<string> | readonly string[]): boolean {
  const set: ReadonlySet<string> = granted instanceof Set ? granted : new Set(granted as readonly string[]);
  const walk = (node: PermissionQuery): boolean => {
    switch (node.type) {
      case "permission":
        return set.has(node.value);
      case "and":
        return node.operands.every(walk);
      case "or":
        return node.operands.some(walk);
    }
  };
  return walk(query);
}

/** Renders a parsed query back to text, fully parenthesised where needed. */
export function formatPermissionQuery(query: PermissionQuery): string {
  switch (query.type) {
    case "permission":
      return query.value;
    case "and":
      return query.operands.map((q) => (q.type === "or" ? `(${formatPermissionQuery(q)})` : formatPermissionQuery(q))).join(" AND ");
    case "or":
      return query.operands.map(formatPermissionQuery).join(" OR ");
  }
}

/** The permissions a query mentions, in order of first appearance. */
export function permissionsInQuery(query: PermissionQuery): string[] {
  const out = new Set<string>();
  const walk = (node: PermissionQuery): void => {
    if (node.type === "permission") out.add(node.value);
    else node.operands.forEach(walk);
  };
  walk(query);
  return [...out];
}
