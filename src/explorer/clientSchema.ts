import type {
  IntrospectionDirective,
  IntrospectionField,
  IntrospectionInputValue,
  IntrospectionQuery,
  IntrospectionType,
  IntrospectionTypeRef,
} from 'graphql';

/**
 * The schema a frontend developer sees in the explorer's docs pane: the subgraph's
 * API without the federation machinery the router uses (`_entities`, `_service`,
 * `_Any`, `_Entity`, `_Service`, `link__*`, `federation__*` and the type-system
 * directives such as `@key`), as the router's API schema (`supergraph.api.graphql`)
 * leaves them out. It works on introspection data, so it runs in the browser (the
 * explorer's bootstrap filters GraphiQL's introspection answer with it) with no
 * graphql-js; the server keeps answering the router's introspection in full.
 */
export function clientFacingIntrospection(data: IntrospectionQuery): IntrospectionQuery {
  const { __schema: schema } = data;
  const types = schema.types.filter((type) => !isFederationTypeName(type.name)).map(withoutFederationReferences);
  return {
    ...data,
    __schema: {
      ...schema,
      types,
      directives: schema.directives.filter(isClientDirective),
    },
  };
}

/** Types the federation spec adds to every subgraph (v1 and v2 names, imported or prefixed). */
export function isFederationTypeName(name: string): boolean {
  return FEDERATION_TYPES.has(name) || /^(link|federation)__/.test(name);
}

const FEDERATION_TYPES = new Set(['_Service', '_Any', '_Entity', '_FieldSet', 'FieldSet']);

/** GraphQL's own directives, kept even though `@deprecated`, `@specifiedBy` and `@oneOf` are type-system ones. */
const SPECIFIED_DIRECTIVES = new Set(['skip', 'include', 'deprecated', 'specifiedBy', 'oneOf', 'defer', 'stream']);

const EXECUTABLE_LOCATIONS = new Set([
  'QUERY', 'MUTATION', 'SUBSCRIPTION', 'FIELD', 'FRAGMENT_DEFINITION', 'FRAGMENT_SPREAD', 'INLINE_FRAGMENT', 'VARIABLE_DEFINITION',
]);

/**
 * A client writes only executable directives; the type-system ones beyond GraphQL's
 * own (`@key`, `@shareable`, `@link`, `@federation__*`) describe the schema to the router.
 */
function isClientDirective(directive: IntrospectionDirective): boolean {
  if (directive.args.some(refersToFederation)) return false;
  return SPECIFIED_DIRECTIVES.has(directive.name) || directive.locations.some((location) => EXECUTABLE_LOCATIONS.has(location));
}

function namedType(ref: IntrospectionTypeRef): string | undefined {
  let current: IntrospectionTypeRef = ref;
  while ('ofType' in current && current.ofType) current = current.ofType;
  return 'name' in current ? current.name : undefined;
}

function refersToFederation(value: IntrospectionField | IntrospectionInputValue): boolean {
  const name = namedType(value.type);
  if (name !== undefined && isFederationTypeName(name)) return true;
  return 'args' in value && value.args.some(refersToFederation);
}

/** Drops the fields (`Query._entities`, `Query._service`) and list entries that name a dropped type. */
function withoutFederationReferences(type: IntrospectionType): IntrospectionType {
  switch (type.kind) {
    case 'OBJECT':
      return {
        ...type,
        fields: type.fields.filter((field) => !refersToFederation(field)),
        interfaces: type.interfaces.filter((ref) => !isFederationTypeName(ref.name)),
      };
    case 'INTERFACE':
      return {
        ...type,
        fields: type.fields.filter((field) => !refersToFederation(field)),
        interfaces: type.interfaces.filter((ref) => !isFederationTypeName(ref.name)),
        possibleTypes: type.possibleTypes.filter((ref) => !isFederationTypeName(ref.name)),
      };
    case 'UNION':
      return { ...type, possibleTypes: type.possibleTypes.filter((ref) => !isFederationTypeName(ref.name)) };
    case 'INPUT_OBJECT':
      return { ...type, inputFields: type.inputFields.filter((field) => !refersToFederation(field)) };
    default:
      return type;
  }
}
