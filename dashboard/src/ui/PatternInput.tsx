/**
 * A text field of a filter form that takes only values of a pattern (an id the list can use).
 * The browser holds a form with a mismatching value back; its own bubble is all that says so,
 * and it goes at once (a headless or assistive browser may show none). So the field also says it
 * beside itself, marked invalid and described by the message, until its value changes (outside
 * audit: a malformed subscription id looked applied).
 */
import { useState } from "preact/hooks"

export const PatternInput = (props: {
  readonly id: string
  readonly value: string
  readonly pattern: string
  /** What a value must be, for the browser's bubble and the message. */
  readonly title: string
  readonly placeholder?: string | undefined
  readonly onInput: (value: string) => void
}) => {
  const [refused, setRefused] = useState(false)
  const errorId = `${props.id}-error`
  return (
    <>
      <input
        id={props.id}
        type="text"
        placeholder={props.placeholder}
        value={props.value}
        pattern={props.pattern}
        title={props.title}
        aria-invalid={refused ? "true" : undefined}
        aria-describedby={refused ? errorId : undefined}
        onInvalid={() => setRefused(true)}
        onInput={(event) => {
          setRefused(false)
          props.onInput(event.currentTarget.value)
        }}
      />
      {refused ? <span id={errorId} class="field-error" role="alert">Not applied: {props.title}.</span> : null}
    </>
  )
}
