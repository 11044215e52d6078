// keyguard's own ratelimit.listNamespaces: the workspace's rate-limit namespaces, so that a reader
// (the console) need not know the names the code passes to ratelimit.limit.
import { fromRoot } from "./authorization";
import { defineExtension } from "./operation";
import { pageOf } from "../domain/pagination";

/** Which namespaces the root key may read the overrides of (`ratelimit.*.read_override` or `ratelimit.<id>.read_override`). */
type NamespaceGrant = (namespaceId: string) => boolean;

/** Never a 403: the namespaces the root key may not read are left out, as apis.listApis does with APIs. */
export const listNamespacesOperation = defineExtension<"ratelimit.listNamespaces", NamespaceGrant>("ratelimit.listNamespaces", {
  access: "read",
  authorize: fromRoot(
    "ratelimit.<namespaceId>.read_override",
    (root) => (id: string) => root.permissions.has("ratelimit.*.read_override") || root.permissions.has(`ratelimit.${id}.read_override`),
  ),
  async run(ctx, body) {
    const ws = ctx.root.workspaceId;
    const readable = ctx.resource;
    const page = await pageOf(
      (from, limit) => ctx.tx.list("ratelimitNamespaces", ws, { from, limit }),
      body.cursor,
      body.limit,
      (ns) => readable(ns.id),
    );
    return {
      data: page.items.map((ns) => ({ namespaceId: ns.id, name: ns.name, createdAt: ns.createdAt })),
      pagination: page.pagination,
    };
  },
});
