/** The filter fields of one trigger, generated from its filter schema (filterSchema.ts). */
import type { FilterField, FilterValues } from "../filterSchema.ts"
import { CodeText } from "../ui/CodeText.tsx"

const hintOf = (field: FilterField): string =>
  [field.description ?? "", field.kind === "string-list" ? "Comma separated." : ""].filter((part) => part !== "").join(" ")

export const FilterForm = (
  { fields, values, onChange }: {
    readonly fields: ReadonlyArray<FilterField>
    readonly values: FilterValues
    readonly onChange: (values: FilterValues) => void
  }
) => (
  <fieldset class="filters">
    <legend>Filters</legend>
    {fields.length === 0 ? <p class="muted">This trigger takes no filters.</p> : null}
    {fields.map((field) => {
      const id = `filter-${field.name}`
      const hint = hintOf(field)
      const describedBy = hint === "" ? undefined : `${id}-hint`
      if (field.kind === "boolean") {
        return (
          <div class="check" key={field.name}>
            <input
              id={id}
              type="checkbox"
              checked={values[field.name] === true}
              aria-describedby={describedBy}
              onChange={(event) => onChange({ ...values, [field.name]: event.currentTarget.checked })}
            />
            <label for={id}>{field.name}</label>
            {describedBy === undefined ? null : <p id={describedBy} class="hint"><CodeText text={hint} /></p>}
          </div>
        )
      }
      const value = values[field.name]
      const text = typeof value === "string" ? value : ""
      return (
        <div class="field" key={field.name}>
          <label for={id}>
            {field.name}
            {field.required ? " (required)" : " (optional)"}
          </label>
          {field.kind === "integer" || field.kind === "number" ? (
            <input
              id={id}
              type="number"
              step={field.kind === "integer" ? 1 : "any"}
              required={field.required}
              aria-describedby={describedBy}
              value={text}
              onInput={(event) => onChange({ ...values, [field.name]: event.currentTarget.value })}
            />
          ) : (
            <input
              id={id}
              type="text"
              required={field.required}
              aria-describedby={describedBy}
              value={text}
              onInput={(event) => onChange({ ...values, [field.name]: event.currentTarget.value })}
            />
          )}
          {describedBy === undefined ? null : <p id={describedBy} class="hint"><CodeText text={hint} /></p>}
        </div>
      )
    })}
  </fieldset>
)
