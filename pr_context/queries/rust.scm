; Definitions: @definition.<kind> is the definition node, @name.definition.<kind> its name.
; `impl` blocks and inline `mod` blocks qualify the names inside them but are not
; definitions themselves. A "function" inside an impl or trait becomes a method in code_defs.

(function_item
  name: (identifier) @name.definition.function) @definition.function

(function_signature_item
  name: (identifier) @name.definition.function) @definition.function

(macro_definition
  name: (identifier) @name.definition.function) @definition.function

(struct_item
  name: (type_identifier) @name.definition.struct) @definition.struct

(union_item
  name: (type_identifier) @name.definition.struct) @definition.struct

(enum_item
  name: (type_identifier) @name.definition.enum) @definition.enum

(trait_item
  name: (type_identifier) @name.definition.trait) @definition.trait

(type_item
  name: (type_identifier) @name.definition.type) @definition.type

(impl_item
  type: (_) @name.definition.impl) @definition.impl

(mod_item
  name: (identifier) @name.definition.module
  body: (declaration_list)) @definition.module

; References: @name.reference.<kind> is the last identifier, @receiver the text left of it.
; When one identifier matches several patterns the kind with the highest priority wins
; (call > instantiation > type > attribute), then the match with a receiver.

(type_parameter name: (type_identifier) @skip)

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (field_expression
    value: (_) @receiver
    field: (field_identifier) @name.reference.call))

(call_expression
  function: (scoped_identifier
    path: (_) @receiver
    name: (identifier) @name.reference.call))

(call_expression
  function: (generic_function
    function: (field_expression
      value: (_) @receiver
      field: (field_identifier) @name.reference.call)))

(call_expression
  function: (generic_function
    function: (identifier) @name.reference.call))

(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: (_) @receiver
      name: (identifier) @name.reference.call)))

(macro_invocation
  macro: (identifier) @name.reference.call)

(struct_expression
  name: (type_identifier) @name.reference.instantiation)

(struct_expression
  name: (scoped_type_identifier
    path: (_) @receiver
    name: (type_identifier) @name.reference.instantiation))

(field_expression
  value: (_) @receiver
  field: (field_identifier) @name.reference.attribute)

(scoped_type_identifier
  path: (_) @receiver
  name: (type_identifier) @name.reference.type)

(type_identifier) @name.reference.type

; Names read as values: a function passed, stored or returned (``.map(parse_item)``,
; ``Handler { run: serve }``, ``spawn(worker::run)``). Locals (below) are left out.
(arguments (identifier) @name.reference.value)
(arguments
  (scoped_identifier
    path: (_) @receiver
    name: (identifier) @name.reference.value))
(field_initializer value: (identifier) @name.reference.value)
(shorthand_field_initializer (identifier) @name.reference.value)
(let_declaration value: (identifier) @name.reference.value)
(return_expression (identifier) @name.reference.value)
(array_expression (identifier) @name.reference.value)
(tuple_expression (identifier) @name.reference.value)

; Scopes and the names their patterns bind, to tell a local read as a value from a
; reference.
(function_item) @scope
(closure_expression) @scope
(parameter pattern: (identifier) @local)
(closure_parameters (identifier) @local)
(let_declaration pattern: (identifier) @local)
(let_condition pattern: (identifier) @local)
(for_expression pattern: (identifier) @local)
(match_pattern (identifier) @local)
(tuple_pattern (identifier) @local)
(tuple_struct_pattern (identifier) @local)
(slice_pattern (identifier) @local)
(field_pattern name: (shorthand_field_identifier) @local)
(field_pattern pattern: (identifier) @local)
(ref_pattern (identifier) @local)
(reference_pattern (identifier) @local)
(mut_pattern (identifier) @local)
(captured_pattern (identifier) @local)
(or_pattern (identifier) @local)

(use_declaration) @import
(extern_crate_declaration) @import
