/**
 * `keys create|list|revoke`: database API keys, stored hashed; a new key is printed once.
 */
import { Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as ApiKeys from "../../infra/access/ApiKeys.ts"
import { fail, print, printTable, withDatabase } from "./Shared.ts"

const ID = /^[A-Za-z0-9_.-]{1,64}$/

const withKeys = <A, E>(f: (keys: ApiKeys.ApiKeysShape) => Effect.Effect<A, E>, options: { readonly readOnly?: boolean } = {}) =>
  withDatabase(Effect.flatMap(ApiKeys.ApiKeys, f).pipe(Effect.provide(ApiKeys.layerPg)), options)

const create = Command.make(
  "create",
  {
    project: Flag.String("project").pipe(Flag.withDescription("Project id ([A-Za-z0-9_.-]{1,64})")),
    user: Flag.String("user").pipe(Flag.withDescription("Pin the key to this user"), Flag.optional)
  },
  ({ project, user }) =>
    Effect.gen(function*() {
      const userId = Option.getOrUndefined(user)
      if (!ID.test(project) || (userId !== undefined && !ID.test(userId))) {
        return yield* fail("project and user ids must match [A-Za-z0-9_.-]{1,64}")
      }
      const { key, record } = yield* withKeys((keys) => keys.create({ projectId: project, userId }))
      yield* print(`key id:  ${record.keyId}`)
      yield* print(`project: ${record.projectId}${record.userId !== undefined ? `  (pinned to user ${record.userId})` : ""}`)
      yield* print(`key:     ${Redacted.value(key)}`)
      yield* print("The key is shown once; only its hash is stored.")
    })
).pipe(Command.withDescription("Create an API key for a project (unpinned, or pinned with --user)"))

const list = Command.make(
  "list",
  { project: Flag.String("project").pipe(Flag.withDescription("Only this project's keys"), Flag.optional) },
  ({ project }) =>
    Effect.gen(function*() {
      const records = yield* withKeys((keys) => keys.list(Option.getOrUndefined(project)), { readOnly: true })
      if (records.length === 0) return yield* print("no keys")
      yield* printTable(
        ["KEY ID", "PREFIX", "PROJECT", "PINNED USER", "CREATED", "STATE"],
        records.map((r) => [r.keyId, `${r.prefix}…`, r.projectId, r.userId ?? "-", r.createdAt, r.revokedAt ? `revoked ${r.revokedAt}` : "active"])
      )
    })
).pipe(Command.withDescription("List keys (id, prefix, project, pinned user, created, state); never the keys themselves"))

/** What a key id looks like (`key_…`, `key_bootstrap_1`): only such an argument is printed. */
const KEY_ID = /^key_[A-Za-z0-9_]{1,64}$/

const revoke = Command.make(
  "revoke",
  { keyId: Argument.String("key-id").pipe(Argument.withDescription("The key id printed by create or list")) },
  ({ keyId }) =>
    Effect.gen(function*() {
      const revoked = yield* withKeys((keys) => keys.revoke(keyId))
      // An argument that is no key id may be a key pasted by mistake: it is not printed back.
      if (!revoked) return yield* fail(KEY_ID.test(keyId) ? `no active key ${keyId}` : "no active key has that id (key ids start with key_, as keys list shows them)")
      yield* print(`revoked ${keyId} (every process stops accepting it within 5 seconds)`)
    })
).pipe(Command.withDescription("Revoke a key"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("Manage database API keys"),
  Command.withSubcommands([create, list, revoke])
)
