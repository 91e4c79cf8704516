/**
 * One trigger subscription, where a trigger event's row and the list lead: what it listens to
 * and for whom, with links on to its events and to its endpoints (each with its delivery
 * history). Rotating and deleting stay in the list, beside every other subscription's.
 */
import type { Client } from "../api.ts"
import { useResource } from "../data.ts"
import { ErrorNotice, Loading } from "../ui/Feedback.tsx"
import { Json } from "../ui/Json.tsx"
import { Link } from "../ui/Link.tsx"
import { UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"

export const SubscriptionDetail = ({ client, subscriptionId }: { readonly client: Client; readonly subscriptionId: string }) => {
  const record = useResource(`subscription:${subscriptionId}`, () => client.subscriptions.get(subscriptionId))
  const subscription = record.value
  return (
    <>
      <p><Link to={{ view: "subscriptions" }}>← All subscriptions</Link></p>
      {record.problem === undefined ? null : <ErrorNotice problem={record.problem} />}
      {subscription === undefined ? (record.problem === undefined ? <Loading what="the subscription" /> : null) : (
        <section aria-labelledby="subscription-title">
          <h2 id="subscription-title"><code>{subscription.subscriptionId}</code></h2>
          <p><Link to={{ view: "trigger-events", subscriptionId: subscription.subscriptionId }}>Events of this subscription</Link></p>
          <dl class="fields">
            <dt>Trigger</dt>
            <dd><code>{subscription.trigger}</code></dd>
            <dt>User</dt>
            <dd><UserText text={subscription.userId} /></dd>
            <dt>Connection</dt>
            <dd>{subscription.connectionId === undefined ? "—" : <code><UserText text={subscription.connectionId} /></code>}</dd>
            <dt>Webhook endpoints</dt>
            <dd>
              {subscription.webhookEndpointIds.map((endpointId) => (
                <div key={endpointId}><Link to={{ view: "webhook", endpointId }}><code>{endpointId}</code></Link></div>
              ))}
            </dd>
            <dt>Status</dt>
            <dd>{subscription.status}{subscription.pollIntervalSeconds === undefined ? " (push)" : `, polling every ${subscription.pollIntervalSeconds} s`}</dd>
            <dt>Created</dt>
            <dd><Time iso={subscription.createdAt} /></dd>
            <dt>Updated</dt>
            <dd><Time iso={subscription.updatedAt} /></dd>
          </dl>
          <h3>Filters</h3>
          <Json value={subscription.filters} label="Filters" />
        </section>
      )}
    </>
  )
}
