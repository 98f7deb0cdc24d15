; Shared by javascript, typescript and tsx (TypeScript's grammar extends JavaScript's).
; Definitions: @definition.<kind> is the definition node, @name.definition.<kind> its name.
; A "function" directly inside a class body becomes a method in code_defs.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(generator_function_declaration
  name: (identifier) @name.definition.function) @definition.function

(method_definition
  name: (_) @name.definition.function) @definition.function

(variable_declarator
  name: (identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)
          (parenthesized_expression [(arrow_function) (function_expression)])]) @definition.function

; A module-level constant made by a call that takes a function: React's
; ``const Button = forwardRef((props, ref) => ...)`` and ``memo(...)``, a store's
; ``create((set) => ...)``, ``asyncHandler(async (req, res) => ...)``.
(program
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name.definition.function
      value: (call_expression
        arguments: (arguments [(arrow_function) (function_expression)]))) @definition.function))

(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator
        name: (identifier) @name.definition.function
        value: (call_expression
          arguments: (arguments [(arrow_function) (function_expression)]))) @definition.function)))

; CommonJS: ``exports.f = function () {}``, ``Foo.prototype.f = () => {}``.
(assignment_expression
  left: (member_expression
    property: (property_identifier) @name.definition.function)
  right: [(arrow_function) (function_expression) (generator_function)]) @definition.function

(class_declaration
  name: (_) @name.definition.class) @definition.class

(variable_declarator
  name: (identifier) @name.definition.class
  value: (class)) @definition.class

; Wrappers: a definition's lines include a wrapper that holds only it (and decorators).
(export_statement
  declaration: (_) @wrapped) @wrapper

(lexical_declaration
  (variable_declarator
    value: [(arrow_function) (function_expression) (generator_function) (class)
            (parenthesized_expression) (call_expression)]) @wrapped) @wrapper

(variable_declaration
  (variable_declarator
    value: [(arrow_function) (function_expression) (generator_function) (class)]) @wrapped) @wrapper

(expression_statement
  (assignment_expression
    right: [(arrow_function) (function_expression) (generator_function)]) @wrapped) @wrapper

; References: @name.reference.<kind> is the last identifier, @receiver the text left of it.
; When one identifier matches several patterns the kind with the highest priority wins
; (call > instantiation > type > attribute), then the match with a receiver.

(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (member_expression
    object: (_) @receiver
    property: [(property_identifier) (private_property_identifier)] @name.reference.call))

(new_expression
  constructor: (identifier) @name.reference.instantiation)

(new_expression
  constructor: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name.reference.instantiation))

(member_expression
  object: (_) @receiver
  property: [(property_identifier) (private_property_identifier)] @name.reference.attribute)

; Applying a decorator calls it.
(decorator (identifier) @name.reference.call)
(decorator (member_expression
  object: (_) @receiver
  property: (property_identifier) @name.reference.call))

; Names read as values: a function passed, stored, returned or shorthand-listed
; (``arr.map(render)``, ``{ onSave }``). Locals (below) are left out.
(arguments (identifier) @name.reference.value)
(pair value: (identifier) @name.reference.value)
(shorthand_property_identifier) @name.reference.value
(return_statement (identifier) @name.reference.value)
(variable_declarator value: (identifier) @name.reference.value)
(assignment_expression right: (identifier) @name.reference.value)
(array (identifier) @name.reference.value)
(arrow_function body: (identifier) @name.reference.value)
(ternary_expression consequence: (identifier) @name.reference.value)
(ternary_expression alternative: (identifier) @name.reference.value)

; Scopes and the names they bind, to tell a local read as a value from a reference.
(function_declaration) @scope
(generator_function_declaration) @scope
(function_expression) @scope
(generator_function) @scope
(arrow_function) @scope
(method_definition) @scope
(variable_declarator name: (identifier) @local)
(array_pattern (identifier) @local)
(object_pattern (shorthand_property_identifier_pattern) @local)
(pair_pattern value: (identifier) @local)
(rest_pattern (identifier) @local)
(assignment_pattern left: (identifier) @local)
(arrow_function parameter: (identifier) @local)
(catch_clause parameter: (identifier) @local)
(for_in_statement left: (identifier) @local)

; Imports, read by code_imports: import statements, re-exports, require() and import().
(import_statement) @import
(export_statement source: (_)) @import
(call_expression
  function: (identifier) @_require
  arguments: (arguments . (string))
  (#eq? @_require "require")) @import
(call_expression
  function: (import)
  arguments: (arguments . (string))) @import
