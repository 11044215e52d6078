// What the keys list and a key's page both do to a key, each confirmed first: disable or enable it,
// reroll it (the new key shown once), delete it. Each resolves to whether it was done (reroll: the
// new key's id); a refusal or an error is shown in `slot`.
import type { KeyInfo } from "../../protocol/types";
import { call } from "../api";
import { announce, attempt, confirmDialog, showOnce } from "../ui";

const labelOf = (key: KeyInfo) => key.name ?? key.keyId;

export async function toggleKey(key: KeyInfo, slot: HTMLElement): Promise<boolean> {
  const label = labelOf(key);
  const disabling = key.enabled;
  const sure = await confirmDialog(
    disabling ? "Disable this key?" : "Enable this key?",
    disabling ? `${label} will be refused (401) until enabled again.` : `${label} will be accepted again.`,
    disabling ? "Disable key" : "Enable key",
  );
  if (!sure) return false;
  return attempt(slot, disabling ? "disable this key" : "enable this key", async () => {
    await call("keys.updateKey", { keyId: key.keyId, enabled: !disabling });
    announce(`Key ${label} ${disabling ? "disabled" : "enabled"}.`);
  });
}

export async function rerollKey(key: KeyInfo, slot: HTMLElement): Promise<string | undefined> {
  const sure = await confirmDialog(
    "Reroll this key?",
    `A new key replaces ${labelOf(key)} with the same settings; the old key stops working now.`,
    "Reroll key",
  );
  if (!sure) return undefined;
  let newId: string | undefined;
  await attempt(slot, "reroll this key", async () => {
    const { data } = await call("keys.rerollKey", { keyId: key.keyId, expiration: 0 });
    await showOnce("The rerolled key", data.key, `New key ${data.keyId}. Copy it now: it is not shown again.`);
    newId = data.keyId;
  });
  return newId;
}

export async function deleteKey(key: KeyInfo, slot: HTMLElement): Promise<boolean> {
  const label = labelOf(key);
  if (!(await confirmDialog("Delete this key?", `${label} (${key.keyId}) will be deleted; apps using it get 401.`, "Delete key")))
    return false;
  return attempt(slot, "delete this key", async () => {
    await call("keys.deleteKey", { keyId: key.keyId });
    announce(`Key ${label} deleted.`);
  });
}
