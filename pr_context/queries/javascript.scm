; JavaScript additions to ecmascript.scm.

(field_definition
  property: (_) @name.definition.function
  value: [(arrow_function) (function_expression)]) @definition.function

; Base classes.
(class_heritage (identifier) @name.reference.type)
(class_heritage (member_expression
  object: (_) @receiver
  property: (property_identifier) @name.reference.type))

; Parameters (TypeScript wraps them in required_parameter, see typescript.scm).
(formal_parameters (identifier) @local)
