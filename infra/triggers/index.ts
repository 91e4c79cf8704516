/**
 * Triggers (spec, "Subscriptions", "Provider push ingestion", "Trigger event history";
 * decisions.md section 5): subscriptions as actors, push ingestion, dedup claims, admission and
 * fan-out into the webhook lanes, the GitHub pollers, and the history with its sweep. With a
 * database the dedup claims and polling cursors are tables; payloads stay in this process.
 */
import { Layer } from "effect"
import { SUBSCRIPTION_STREAM_TYPE } from "../../domain/triggers/Subscription.ts"
import { ARRIVAL_STREAM_TYPE, SWEEP_STREAM_TYPE } from "../../domain/triggers/TriggerEvent.ts"
import * as Access from "../access/index.ts"
import * as Actors from "../actors/index.ts"
import * as Connections from "../connections/index.ts"
import { onStorage } from "../eventlog/Database.ts"
import * as Eventlog from "../eventlog/index.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import * as Webhooks from "../webhooks/index.ts"
import * as Admission from "./Admission.ts"
import * as DedupClaims from "./DedupClaims.ts"
import * as Pollers from "./Pollers.ts"
import * as PollCursors from "./PollCursors.ts"
import * as Subscriptions from "./Subscriptions.ts"
import * as TriggerFanout from "./TriggerFanout.ts"
import * as TriggerHistory from "./TriggerHistory.ts"
import * as TriggerIngest from "./TriggerIngest.ts"
import * as TriggerPayloads from "./TriggerPayloads.ts"
import { subscriptionsProjection, triggerEventsProjection, triggerProgressProjection } from "./TriggerProjections.ts"
import * as ViewReads from "./ViewReads.ts"

export { Subscriptions } from "./Subscriptions.ts"
export { TriggerHistory } from "./TriggerHistory.ts"
export { TriggerIngest } from "./TriggerIngest.ts"

const StoresLive = Layer.mergeAll(
  onStorage(DedupClaims.layerMemory, DedupClaims.layerPg),
  onStorage(PollCursors.layerMemory, PollCursors.layerPg),
  onStorage(ViewReads.layerMemory, ViewReads.layerPg),
  TriggerPayloads.layer
)

const PurgeLive = Layer.effectDiscard(DedupClaims.purgeLoop)

export const layer = Layer.mergeAll(TriggerIngest.layer, Pollers.layer, TriggerHistory.sweeperLayer, PurgeLive).pipe(
  Layer.provideMerge(Admission.layer),
  Layer.provideMerge(TriggerFanout.layer),
  Layer.provideMerge(Subscriptions.layer),
  Layer.provideMerge(TriggerHistory.layer),
  Layer.provideMerge(StoresLive),
  Layer.provide([Webhooks.layer, Connections.layer, OutboundHttp.layer, Actors.layer, Eventlog.layer, Access.layer])
)

export const migrations: ReadonlyArray<Migration> = [...DedupClaims.dedupMigrations, ...PollCursors.pollCursorMigrations]
export const projections: ReadonlyArray<Projection> = [subscriptionsProjection, triggerEventsProjection, triggerProgressProjection]
export const streamTypes: ReadonlyArray<string> = [SUBSCRIPTION_STREAM_TYPE, ARRIVAL_STREAM_TYPE, SWEEP_STREAM_TYPE]
