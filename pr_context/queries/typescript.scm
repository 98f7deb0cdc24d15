; TypeScript additions to ecmascript.scm (also used for tsx).

(function_signature
  name: (identifier) @name.definition.function) @definition.function

(method_signature
  name: (_) @name.definition.function) @definition.function

(abstract_method_signature
  name: (_) @name.definition.function) @definition.function

(public_field_definition
  name: (_) @name.definition.function
  value: [(arrow_function) (function_expression)]) @definition.function

; ``const f = ((a) => ...) as F`` and ``satisfies F``: a function typed as a whole.
(variable_declarator
  name: (identifier) @name.definition.function
  value: [(as_expression (parenthesized_expression [(arrow_function) (function_expression)]))
          (satisfies_expression
            (parenthesized_expression [(arrow_function) (function_expression)]))])
  @definition.function

(lexical_declaration
  (variable_declarator
    value: [(as_expression) (satisfies_expression)]) @wrapped) @wrapper

(abstract_class_declaration
  name: (type_identifier) @name.definition.class) @definition.class

(interface_declaration
  name: (type_identifier) @name.definition.interface) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name.definition.type) @definition.type

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(internal_module
  name: (_) @name.definition.module) @definition.module

(module
  name: (_) @name.definition.module) @definition.module

(ambient_declaration (_) @wrapped) @wrapper
(expression_statement (internal_module) @wrapped) @wrapper

; Type uses. Declared type parameters are not uses.
(extends_clause value: (identifier) @name.reference.type)
(extends_clause value: (member_expression
  object: (_) @receiver
  property: (property_identifier) @name.reference.type))
(type_parameter name: (type_identifier) @skip)

(nested_type_identifier
  module: (_) @receiver
  name: (type_identifier) @name.reference.type)

(type_identifier) @name.reference.type

; Parameters bind locals.
(required_parameter pattern: (identifier) @local)
(optional_parameter pattern: (identifier) @local)
