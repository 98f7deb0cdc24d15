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
; (call > instantiation > type > attribute), then the match with a receiver.

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
