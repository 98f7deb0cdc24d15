; Definitions: @definition.<kind> is the definition node, @name.definition.<kind> its name.
; Method receivers are read in code_defs. Interface method specs become methods there.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(method_declaration
  name: (field_identifier) @name.definition.method) @definition.method

(method_elem
  name: (field_identifier) @name.definition.function) @definition.function

(type_spec
  name: (type_identifier) @name.definition.struct
  type: (struct_type)) @definition.struct

(type_spec
  name: (type_identifier) @name.definition.interface
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name.definition.type) @definition.type

(type_alias
  name: (type_identifier) @name.definition.type) @definition.type

; Wrappers: a lone ``type X ...`` spec's lines include its ``type`` keyword.
(type_declaration [(type_spec) (type_alias)] @wrapped) @wrapper

; References: @name.reference.<kind> is the last identifier, @receiver the text left of it.
; When one identifier matches several patterns the kind with the highest priority wins
; (call > instantiation > type > attribute), then the match with a receiver.

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (selector_expression
    operand: (_) @receiver
    field: (field_identifier) @name.reference.call))

(composite_literal
  type: (type_identifier) @name.reference.instantiation)

(composite_literal
  type: (qualified_type
    package: (_) @receiver
    name: (type_identifier) @name.reference.instantiation))

(composite_literal
  type: (generic_type
    type: (type_identifier) @name.reference.instantiation))

(selector_expression
  operand: (_) @receiver
  field: (field_identifier) @name.reference.attribute)

(qualified_type
  package: (_) @receiver
  name: (type_identifier) @name.reference.type)

(type_identifier) @name.reference.type

; Names read as values: a function passed, stored or returned (``Args: NoArgs``,
; ``run(cmd, handler)``). Locals (below) are left out.
(argument_list (identifier) @name.reference.value)
(keyed_element value: (literal_element (identifier) @name.reference.value))
(literal_value (literal_element (identifier) @name.reference.value))
(return_statement (expression_list (identifier) @name.reference.value))
(short_var_declaration right: (expression_list (identifier) @name.reference.value))
(assignment_statement right: (expression_list (identifier) @name.reference.value))
(var_spec value: (expression_list (identifier) @name.reference.value))

; Scopes and the names they bind, to tell a local read as a value from a reference.
(function_declaration) @scope
(method_declaration) @scope
(func_literal) @scope
(parameter_declaration name: (identifier) @local)
(variadic_parameter_declaration name: (identifier) @local)
(short_var_declaration left: (expression_list (identifier) @local))
(var_spec name: (identifier) @local)
(const_spec name: (identifier) @local)
(range_clause left: (expression_list (identifier) @local))

(import_spec) @import
