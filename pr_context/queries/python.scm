; Definitions: @definition.<kind> is the definition node, @name.definition.<kind> its name.
; A "function" directly inside a class body becomes a method in code_defs.

(function_definition
  name: (identifier) @name.definition.function) @definition.function

(class_definition
  name: (identifier) @name.definition.class) @definition.class

; Wrappers: a definition's lines include a wrapper that holds only it (and decorators).
(decorated_definition
  definition: (_) @wrapped) @wrapper

; References: @name.reference.<kind> is the last identifier, @receiver the text left of it.
; When one identifier matches several patterns the kind with the highest priority wins
; (call > instantiation > type > attribute > value), then the match with a receiver.

(call
  function: (identifier) @name.reference.call)

(call
  function: (attribute
    object: (_) @receiver
    attribute: (identifier) @name.reference.call))

(attribute
  object: (_) @receiver
  attribute: (identifier) @name.reference.attribute)

; Applying a decorator calls it.
(decorator (identifier) @name.reference.call)
(decorator (attribute object: (_) @receiver attribute: (identifier) @name.reference.call))

; Values: a bare name read without a call (passed, assigned, returned, collected, or the
; object of a decorator such as `@prop.setter`) names what it holds: a function passed as
; a callback is a use of it. Names a function, lambda, comprehension or class body binds
; (see @local below) are locals, not references, and are left out.
(assignment right: (identifier) @name.reference.value)
(argument_list (identifier) @name.reference.value)
(keyword_argument value: (identifier) @name.reference.value)
(return_statement (identifier) @name.reference.value)
(expression_list (identifier) @name.reference.value)
(list (identifier) @name.reference.value)
(tuple (identifier) @name.reference.value)
(set (identifier) @name.reference.value)
(pair value: (identifier) @name.reference.value)
(default_parameter value: (identifier) @name.reference.value)
(typed_default_parameter value: (identifier) @name.reference.value)
(conditional_expression (identifier) @name.reference.value)
(decorator (attribute object: (identifier) @name.reference.value))
(decorator (call function: (attribute object: (identifier) @name.reference.value)))

; Type uses: annotations (nested `type` nodes cover generic arguments and unions) and bases.
(type (identifier) @name.reference.type)
(type (attribute object: (_) @receiver attribute: (identifier) @name.reference.type))
(generic_type (identifier) @name.reference.type)
(type (binary_operator left: (identifier) @name.reference.type))
(type (binary_operator right: (identifier) @name.reference.type))
(type (binary_operator left: (attribute object: (_) @receiver attribute: (identifier) @name.reference.type)))
(type (binary_operator right: (attribute object: (_) @receiver attribute: (identifier) @name.reference.type)))
(type (binary_operator left: (binary_operator left: (identifier) @name.reference.type)))
(type (binary_operator left: (binary_operator right: (identifier) @name.reference.type)))
(type (subscript value: (identifier) @name.reference.type))
(type (subscript value: (attribute object: (_) @receiver attribute: (identifier) @name.reference.type)))

(class_definition
  superclasses: (argument_list (identifier) @name.reference.type))
(class_definition
  superclasses: (argument_list
    (attribute object: (_) @receiver attribute: (identifier) @name.reference.type)))
(class_definition
  superclasses: (argument_list (subscript value: (identifier) @name.reference.type)))
(class_definition
  superclasses: (argument_list (keyword_argument value: (identifier) @name.reference.type)))
(class_definition
  superclasses: (argument_list
    (keyword_argument
      value: (attribute object: (_) @receiver attribute: (identifier) @name.reference.type))))

; Imports, read by code_imports.
(import_statement) @import
(import_from_statement) @import
(future_import_statement) @import

; Scopes and the names they bind, to tell a local from a reference. A name bound anywhere
; in a function is local to all of it; a class body's names are local to the body only.
(function_definition) @scope
(class_definition) @scope
(lambda) @scope
(list_comprehension) @scope
(set_comprehension) @scope
(dictionary_comprehension) @scope
(generator_expression) @scope

(parameters (identifier) @local)
(lambda_parameters (identifier) @local)
(default_parameter name: (identifier) @local)
(typed_parameter (identifier) @local)
(typed_default_parameter name: (identifier) @local)
(list_splat_pattern (identifier) @local)
(dictionary_splat_pattern (identifier) @local)
(assignment left: (identifier) @local)
(augmented_assignment left: (identifier) @local)
(pattern_list (identifier) @local)
(tuple_pattern (identifier) @local)
(list_pattern (identifier) @local)
(for_statement left: (identifier) @local)
(for_in_clause left: (identifier) @local)
(as_pattern_target (identifier) @local)
(as_pattern_target (tuple (identifier) @local))
(named_expression name: (identifier) @local)
(nonlocal_statement (identifier) @local)
