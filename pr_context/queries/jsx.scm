; JSX elements whose name starts with a capital are component uses, recorded as calls.

(jsx_opening_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))

(jsx_self_closing_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))

(jsx_opening_element
  name: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name.reference.call))

(jsx_self_closing_element
  name: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name.reference.call))

; A closing tag repeats its opening tag's name.
(jsx_closing_element
  name: (member_expression
    property: (property_identifier) @skip))

; ``onClick={handler}`` reads handler as a value.
(jsx_expression (identifier) @name.reference.value)
