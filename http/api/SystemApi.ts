/**
 * Service-level endpoints: an unauthenticated health probe and `GET /v1/me`, which answers who
 * the presented key is (the cheapest authenticated route, used by the benchmark and the
 * dashboard's sign-in).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { described } from "./Query.ts"

export const Me = Schema.Struct({
  projectId: Schema.String,
  keyId: Schema.String,
  pinnedUserId: Schema.optionalKey(Schema.String)
})

export class HealthApi extends HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("health", "/health", { success: Schema.Struct({ status: Schema.Literal("ok") }) }).annotateMerge(
    described("Health", "No key. 200 while the process serves; see /readyz for whether it can do work.")
  )
) {}

export class SystemApi extends HttpApiGroup.make("system").add(
  HttpApiEndpoint.get("me", "/v1/me", { success: Me }).annotateMerge(
    described("Who am I", "The project and key the presented key stands for, and the user it is pinned to, if any.")
  )
) {}
