/**
 * Executions: the list with status and tool filters (and a user, for unpinned keys) kept in the
 * URL, so a reload, the back button and a shared link keep them; cursor paging; and one record
 * with its output or error. A pending or running execution can be cancelled from its row or its
 * record. Both poll while work is pending or running.
 */
import type { RefObject } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { type ExecutionRecord, type ExecutionStatus, listTools } from "../../../client/index.ts"
import { type Client, isPinned, type Me } from "../api.ts"
import { PAGE_SIZE, useAction, usePaged, useResource } from "../data.ts"
import { EXECUTION_STATUSES, type ExecutionFilters, navigate, replaceRoute } from "../router.ts"
import { Button } from "../ui/Button.tsx"
import { Confirm } from "../ui/Confirm.tsx"
import { ErrorNotice, Loading, RecordError } from "../ui/Feedback.tsx"
import { focusIn, focusLost, useFocusKept } from "../ui/Focus.ts"
import { Json } from "../ui/Json.tsx"
import { Link } from "../ui/Link.tsx"
import { ListState } from "../ui/ListState.tsx"
import { ListTable } from "../ui/ListTable.tsx"
import { PatternInput } from "../ui/PatternInput.tsx"
import { Refreshing } from "../ui/Refreshing.tsx"
import { UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"

const running = (execution: ExecutionRecord) => execution.status === "pending" || execution.status === "running"

/** What the page says when an execution finished while its cancel was at hand. */
const finishedSaid = (execution: ExecutionRecord): string => `finished (${execution.status}); there is nothing left to cancel.`

/**
 * Cancels a pending or running execution (any key: a pinned key lists and cancels its own
 * user's), once confirmed (ui/Confirm.tsx), as rotates and deletes are. The button is there only
 * while the execution is pending or running; a refusal (it finished meanwhile: 409) stays, with
 * the service's code and message, after the record moves on. `onDone` reloads and says where the
 * focus goes, as the button may be gone. When the execution finishes by itself (polling saw it)
 * while the focus was on the button or its confirmation, inside `container`, the buttons go with
 * the focus: `onFinished` says where it goes, and says that it finished.
 */
const CancelExecution = (
  { client, execution, label, ariaLabel, container, onDone, onFinished }: {
    readonly client: Client
    readonly execution: ExecutionRecord
    readonly label: string
    readonly ariaLabel?: string
    /** The element around the buttons (the row, the record's actions). */
    readonly container: RefObject<HTMLElement | null>
    readonly onDone: (cancelled: boolean) => void
    readonly onFinished: () => void
  }
) => {
  const { problem, act } = useAction()
  const [busy, setBusy] = useState(false)
  const isRunning = running(execution)
  const hadFocus = focusIn(container.current)
  useEffect(() => {
    // A cancel of this page's own (busy) moves the focus in onDone.
    if (isRunning || busy || !hadFocus || !focusLost()) return
    onFinished()
  }, [isRunning])
  return (
    <>
      {isRunning ? (
        <Confirm
          label={label}
          confirmLabel="Confirm cancel"
          keepLabel="Keep the execution"
          warning="The execution stops for good; a call it had already sent to the provider may still take effect."
          danger
          {...(ariaLabel === undefined ? {} : { startAria: ariaLabel, confirmAria: `Confirm cancelling ${execution.executionId}` })}
          busyLabel={busy ? "Cancelling…" : undefined}
          onConfirm={() => {
            if (busy) return
            setBusy(true)
            let cancelled = false
            void act(async () => {
              await client.executions.cancel(execution.executionId)
              cancelled = true
            }).finally(() => {
              setBusy(false)
              onDone(cancelled)
            })
          }}
        />
      ) : null}
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </>
  )
}

const ExecutionRow = (
  { client, execution, filters, onDone, onFinished }: {
    readonly client: Client
    readonly execution: ExecutionRecord
    /** The list's filters: the record's link keeps them for its way back. */
    readonly filters: ExecutionFilters
    readonly onDone: (executionId: string, cancelled: boolean) => void
    /** It finished while its cancel was at hand: what the list says. */
    readonly onFinished: (said: string) => void
  }
) => {
  const row = useRef<HTMLTableRowElement>(null)
  const id = execution.executionId
  return (
    <tr ref={row} data-execution-id={id}>
      <td><Link to={{ view: "execution", executionId: id, from: filters }}>{id}</Link></td>
      <td><code>{execution.tool}</code></td>
      <td><span class={`badge badge-${execution.status}`}>{execution.status}</span></td>
      <td class="user-id"><UserText text={execution.userId} /></td>
      <td><Time iso={execution.createdAt} /></td>
      <td>{"latencyMs" in execution ? `${execution.latencyMs} ms` : "—"}</td>
      <td>
        <CancelExecution
          client={client}
          execution={execution}
          label="Cancel"
          ariaLabel={`Cancel ${id}`}
          container={row}
          onDone={(cancelled) => {
            // The button goes with the new status: the focus stays in the row, on its link.
            row.current?.querySelector("a")?.focus()
            onDone(id, cancelled)
          }}
          onFinished={() => {
            row.current?.querySelector("a")?.focus()
            onFinished(`${id} ${finishedSaid(execution)}`)
          }}
        />
      </td>
    </tr>
  )
}

/**
 * The filters as chosen; applying them puts them in the URL, which the list follows. The form is
 * made anew for the new filters, so `onApply` moves the focus out of it first (to the list).
 */
const FilterBar = (
  { filters, pinned, onApply }: { readonly filters: ExecutionFilters; readonly pinned: boolean; readonly onApply: () => void }
) => {
  const [status, setStatus] = useState<ExecutionStatus | "">(filters.status ?? "")
  const [tool, setTool] = useState(filters.tool ?? "")
  const [userId, setUserId] = useState(filters.userId ?? "")
  return (
    <form
      class="inline filters-bar"
      aria-label="Filter executions"
      onSubmit={(event) => {
        event.preventDefault()
        const user = userId.trim()
        navigate({
          view: "executions",
          ...(status === "" ? {} : { status }),
          ...(tool === "" ? {} : { tool }),
          ...(pinned || user === "" ? {} : { userId: user })
        })
        onApply()
      }}
    >
      <label for="executions-status">Status</label>
      <select id="executions-status" value={status} onChange={(event) => setStatus(event.currentTarget.value as ExecutionStatus | "")}>
        <option value="">Any status</option>
        {EXECUTION_STATUSES.map((entry) => <option key={entry} value={entry}>{entry}</option>)}
      </select>
      <label for="executions-tool">Tool</label>
      <select id="executions-tool" value={tool} onChange={(event) => setTool(event.currentTarget.value)}>
        <option value="">Any tool</option>
        {listTools().map((entry) => <option key={entry.name} value={entry.name}>{entry.name}</option>)}
      </select>
      {pinned ? null : (
        <>
          <label for="executions-user">User id</label>
          <PatternInput
            id="executions-user"
            value={userId}
            placeholder="all users"
            // Spaces around an id (a pasted one) are let through and trimmed on applying, as the
            // other id fields do; spaces inside one are not.
            pattern="\s*[A-Za-z0-9_.\-]{1,64}\s*"
            title="Up to 64 letters, digits, underscores, dots and hyphens"
            onInput={setUserId}
          />
        </>
      )}
      <button type="submit">Apply filters</button>
    </form>
  )
}

export const Executions = ({ client, me, filters }: { readonly client: Client; readonly me: Me; readonly filters: ExecutionFilters }) => {
  const pinned = isPinned(me)
  // A pinned key lists its own user's executions only: a user in the URL is not its to choose,
  // and is taken out of the URL so that it does not name a user whose list this is not.
  const userId = pinned ? undefined : filters.userId
  const strayUser = pinned && filters.userId !== undefined
  useEffect(() => {
    if (strayUser) replaceRoute({ view: "executions", ...(filters.status === undefined ? {} : { status: filters.status }), ...(filters.tool === undefined ? {} : { tool: filters.tool }) })
  }, [strayUser])
  const paged = usePaged(
    `executions:${filters.status ?? ""}:${filters.tool ?? ""}:${userId ?? ""}`,
    async (cursor) => {
      const page = await client.executions.list({ limit: PAGE_SIZE, cursor, status: filters.status, tool: filters.tool, userId })
      return { items: page.executions, nextCursor: page.nextCursor }
    },
    running
  )
  const [status, setStatus] = useState("")
  // A row that leaves the list (filtered to running ones, it was cancelled or finished) takes the
  // focus with it when it had it (its link, its Cancel or the confirmation): the focus goes to the
  // list's heading rather than the page's body.
  const { section, heading } = useFocusKept(paged.value)
  return (
    <>
      <FilterBar
        key={`${filters.status ?? ""}:${filters.tool ?? ""}:${userId ?? ""}`}
        filters={filters}
        pinned={pinned}
        onApply={() => heading.current?.focus()}
      />
      <section ref={section} aria-labelledby="executions-title">
        <div class="section-head">
          <h2 id="executions-title" ref={heading} tabIndex={-1}>Executions</h2>
          <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
        </div>
        <p role="status" aria-live="polite">{status}</p>
        <Refreshing polling={paged.value?.items.some(running) === true} while="executions are pending or running" />
        <ListState paged={paged} what="executions" empty="No executions match.">
          {(executions) => (
            <ListTable
              label="Executions, newest first"
              columns={["Execution", "Tool", "Status", "User", "Created", "Latency"]}
              actions
            >
              {executions.map((execution) => (
                <ExecutionRow
                  key={execution.executionId}
                  client={client}
                  execution={execution}
                  filters={filters}
                  onDone={(id, done) => {
                    setStatus(done ? `${id} cancelled.` : "")
                    paged.reload()
                  }}
                  onFinished={setStatus}
                />
              ))}
            </ListTable>
          )}
        </ListState>
      </section>
    </>
  )
}

export const ExecutionDetail = (
  { client, executionId, from }: { readonly client: Client; readonly executionId: string; readonly from: ExecutionFilters }
) => {
  const record = useResource(`execution:${executionId}`, () => client.executions.get(executionId), running)
  const execution = record.value
  const heading = useRef<HTMLHeadingElement>(null)
  const actions = useRef<HTMLDivElement>(null)
  const [status, setStatus] = useState("")
  return (
    <>
      <p><Link to={{ view: "executions", ...from }}>← All executions</Link></p>
      {record.problem === undefined ? null : <ErrorNotice problem={record.problem} />}
      {execution === undefined ? (record.problem === undefined ? <Loading what="the execution" /> : null) : (
        <section aria-labelledby="execution-title">
          <h2 id="execution-title" ref={heading} tabIndex={-1}><code>{execution.executionId}</code></h2>
          <div class="actions" ref={actions}>
            <CancelExecution
              client={client}
              execution={execution}
              label="Cancel execution"
              container={actions}
              onDone={(cancelled) => {
                // The button goes with the new status: the focus moves to the record's heading.
                heading.current?.focus()
                setStatus(cancelled ? "Cancelled." : "")
                record.reload()
              }}
              onFinished={() => {
                heading.current?.focus()
                setStatus(`The execution ${finishedSaid(execution)}`)
              }}
            />
          </div>
          <p role="status" aria-live="polite">{status}</p>
          <dl class="fields">
            <dt>Status</dt>
            <dd><span class={`badge badge-${execution.status}`}>{execution.status}</span></dd>
            <dt>Tool</dt>
            <dd><code>{execution.tool}</code> {execution.toolVersion} <span class="muted">(catalog {execution.catalogVersion})</span></dd>
            <dt>Mode</dt>
            <dd>{execution.mode}</dd>
            <dt>User</dt>
            <dd><UserText text={execution.userId} /></dd>
            <dt>Connection</dt>
            <dd>{execution.connectionId === undefined ? "—" : <UserText text={execution.connectionId} />}</dd>
            <dt>Created</dt>
            <dd><Time iso={execution.createdAt} /></dd>
            <dt>Started</dt>
            <dd><Time iso={execution.startedAt} /></dd>
            <dt>Completed</dt>
            <dd><Time iso={execution.completedAt} /></dd>
            {"latencyMs" in execution ? (
              <>
                <dt>Latency</dt>
                <dd>{execution.latencyMs} ms</dd>
              </>
            ) : null}
            {execution.replayed === true ? (
              <>
                <dt>Replayed</dt>
                <dd>yes (an idempotent replay returned this execution)</dd>
              </>
            ) : null}
            {execution.attachments === undefined ? null : (
              <>
                <dt>Attachments</dt>
                <dd>{execution.attachments.fileIds.map((fileId) => <div key={fileId}><code>{fileId}</code></div>)}</dd>
              </>
            )}
            {execution.status === "cancelled" ? (
              <>
                <dt>Dispatch may have begun</dt>
                <dd>{execution.cancellation.dispatchMayHaveBegun ? "yes" : "no"}</dd>
              </>
            ) : null}
          </dl>
          {execution.status === "succeeded" ? (
            <>
              <h3>Output</h3>
              <Json value={execution.output} label="Output" />
            </>
          ) : null}
          {execution.status === "failed" || execution.status === "cancelled" ? (
            <>
              <h3>Error</h3>
              <RecordError error={execution.error} />
            </>
          ) : null}
        </section>
      )}
    </>
  )
}
