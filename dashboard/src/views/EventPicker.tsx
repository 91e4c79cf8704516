/** The event checkboxes of the endpoint forms, as one labelled group; a trigger's hint is its catalog description. */
import { EVENT_CHOICES } from "../events.ts"
import { CodeText } from "../ui/CodeText.tsx"

export const EventPicker = (
  { idPrefix, selected, onChange }: {
    readonly idPrefix: string
    readonly selected: ReadonlyArray<string>
    readonly onChange: (events: ReadonlyArray<string>) => void
  }
) => (
  <fieldset class="events">
    <legend>Events (at least one)</legend>
    {EVENT_CHOICES.map(({ event, hint }) => {
      const id = `${idPrefix}-${event.replace(/[^a-z0-9]+/gi, "-")}`
      return (
        <div class="check" key={event}>
          <input
            id={id}
            type="checkbox"
            checked={selected.includes(event)}
            onChange={(change) =>
              onChange(change.currentTarget.checked ? [...selected, event] : selected.filter((entry) => entry !== event))}
          />
          <label for={id}>
            <code>{event}</code>
            {hint === "" ? null : <span class="muted"> — <CodeText text={hint} /></span>}
          </label>
        </div>
      )
    })}
  </fieldset>
)
