; Definitions: @definition.<kind> is the definition node, @name.definition.<kind> its name.
; A "function" directly inside a class body becomes a method in code_defs; constructors
; are named after their class.

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

(record_declaration
  name: (identifier) @name.definition.class) @definition.class

(interface_declaration
  name: (identifier) @name.definition.interface) @definition.interface

(annotation_type_declaration
  name: (identifier) @name.definition.interface) @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(method_declaration
  name: (identifier) @name.definition.function) @definition.function

(constructor_declaration
  name: (identifier) @name.definition.function) @definition.function

(compact_constructor_declaration
  name: (identifier) @name.definition.function) @definition.function

; References: @name.reference.<kind> is the last identifier, @receiver the text left of it.
; When one identifier matches several patterns the kind with the highest priority wins
; (call > instantiation > type > attribute), then the match with a receiver.

; Qualifiers of a dotted type (`java` and `util` in `java.util.List`) are not uses.
(scoped_type_identifier . (type_identifier) @skip)
(scoped_type_identifier . (scoped_type_identifier (type_identifier) @skip .))
(type_parameter . (type_identifier) @skip)

(method_invocation
  object: (_) @receiver
  name: (identifier) @name.reference.call)

(method_invocation
  name: (identifier) @name.reference.call)

(object_creation_expression
  type: (type_identifier) @name.reference.instantiation)

(object_creation_expression
  type: (generic_type (type_identifier) @name.reference.instantiation))

(object_creation_expression
  type: (scoped_type_identifier
    (_) @receiver . (type_identifier) @name.reference.instantiation .))

(object_creation_expression
  type: (generic_type (scoped_type_identifier
    (_) @receiver . (type_identifier) @name.reference.instantiation .)))

(field_access
  object: (_) @receiver
  field: (identifier) @name.reference.attribute)

; Annotations name their annotation type.
(marker_annotation name: (identifier) @name.reference.type)
(annotation name: (identifier) @name.reference.type)

(scoped_type_identifier
  (_) @receiver . (type_identifier) @name.reference.type .)

(type_identifier) @name.reference.type

; Method references: ``Order::total`` and ``this::handle`` use a method, ``Helper::new``
; a constructor.
(method_reference (_) @receiver . (identifier) @name.reference.attribute .)
(method_reference (identifier) @name.reference.instantiation . "new")

(import_declaration) @import
