import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"

export const HealthHttp = HttpApiBuilder.group(Api, "health", (handlers) =>
  handlers.handle("health", () => Effect.succeed({ status: "ok" as const })))

export const SystemHttp = HttpApiBuilder.group(Api, "system", (handlers) =>
  handlers.handle("me", () =>
    Effect.map(Caller, (caller) => ({
      projectId: caller.projectId,
      keyId: caller.keyId,
      ...(caller.pinnedUserId !== undefined ? { pinnedUserId: caller.pinnedUserId } : {})
    }))))
