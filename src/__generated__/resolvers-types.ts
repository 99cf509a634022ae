import type { GraphQLResolveInfo, GraphQLScalarType, GraphQLScalarTypeConfig } from 'graphql';
import type { LocationRecord, ShiftRecord } from '../upstream/resources';
import type { ConnectionPage, Edge } from '../graphql/data/connections';
import type { UserReference } from '../upstream/records';
import type { GraphQLContext } from '../graphql/data/context';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type Omit<T, K extends keyof T> = Pick<T, Exclude<keyof T, K>>;
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /**
   * An instant with its UTC offset, as RFC 3339 / ISO 8601 (for example
   * `2026-11-23T09:00:00+01:00`). The upstream's offset is kept, so a shift reads in
   * the location's local time.
   */
  DateTime: { input: string; output: string; }
  _FieldSet: { input: unknown; output: unknown; }
};

/** What happened to a record between two polls of its list. */
export type ChangeKind =
  /** The record is new in the list (or newly matches the subscription's filter). */
  | 'ADDED'
  /** The record is gone from the list (or no longer matches the subscription's filter). */
  | 'REMOVED'
  /** The record is still there and some field changed. */
  | 'UPDATED';

/** A place where people work: a shop, a ward, a warehouse. */
export type Location = Node & {
  __typename?: 'Location';
  /** The upstream's id of the location (unique among the company's locations only); the federation key. */
  id: Scalars['ID']['output'];
  /** The location's name, as the upstream has it. */
  name: Scalars['String']['output'];
  /** An opaque id, unique across all types of this API; pass it to `Query.node`. */
  nodeId: Scalars['ID']['output'];
  /**
   * The shifts at this location, in upstream order, optionally those starting in
   * [startsFrom, startsBefore). Needs the `shifts.read` scope. Cursors belong to this
   * location and these dates.
   */
  shifts?: Maybe<ShiftConnection>;
};


/** A place where people work: a shop, a ward, a warehouse. */
export type LocationShiftsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  startsBefore?: InputMaybe<Scalars['DateTime']['input']>;
  startsFrom?: InputMaybe<Scalars['DateTime']['input']>;
};

/** One change to the company's locations. */
export type LocationChange = {
  __typename?: 'LocationChange';
  /** Whether the location was added, updated or removed. */
  kind: ChangeKind;
  /** The location as it is now; null when it was removed. */
  location?: Maybe<Location>;
  /** The location's `nodeId`; present for a removed location too. */
  nodeId: Scalars['ID']['output'];
};

/** A page of the company's locations (a Relay connection). */
export type LocationConnection = {
  __typename?: 'LocationConnection';
  /** The locations of this page with their cursors, in upstream order. */
  edges: Array<LocationEdge>;
  /** The locations of this page, in upstream order (the same as `edges[].node`). */
  nodes: Array<Location>;
  /** Whether there are more locations before or after this page, and the cursors to get them. */
  pageInfo: PageInfo;
};

/** One location in a page, with its cursor. */
export type LocationEdge = {
  __typename?: 'LocationEdge';
  /** Opaque; pass it as `after` or `before` to resume right after or before this edge. */
  cursor: Scalars['String']['output'];
  /** The location. */
  node: Location;
};

/**
 * An object that `Query.node` can fetch again by its `nodeId` (Relay's global object
 * identification, with Hive Gateway's field names). `nodeId` is unique across types;
 * the upstream id stays in `id`.
 */
export type Node = {
  /** An opaque id, unique across all types of this API; pass it to `Query.node`. It names no company: the same id answers only for the company it came from. */
  nodeId: Scalars['ID']['output'];
};

/** Relay cursor-connection page information. */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** The cursor of the last edge of this page; null when the page is empty. */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** Whether a page follows this one: pass `endCursor` as `after` to get it. */
  hasNextPage: Scalars['Boolean']['output'];
  /** Whether a page precedes this one: pass `startCursor` as `before` to get it. */
  hasPreviousPage: Scalars['Boolean']['output'];
  /** The cursor of the first edge of this page; null when the page is empty. */
  startCursor?: Maybe<Scalars['String']['output']>;
};

/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type Query = {
  __typename?: 'Query';
  /** One location by id, or null when the company has no such location. */
  location?: Maybe<Location>;
  /** The company's locations, in upstream order. Nullable: a failure nulls only this field. */
  locations?: Maybe<LocationConnection>;
  /**
   * Relay's global object identification: the location or shift that `nodeId` names,
   * looked up within the request's company. Null when the company has no such object
   * or the id names a type this field does not serve; `BAD_USER_INPUT` when `nodeId`
   * is not a node id at all.
   */
  node?: Maybe<Node>;
  /** One shift by id, or null when the company has no such shift. */
  shift?: Maybe<Shift>;
  /**
   * The company's shifts, in upstream order. Needs the `shifts.read` scope. With a
   * `filter`, only matching shifts, still in upstream order; a filtered page may hold
   * fewer than `first` edges with `hasNextPage: true` when it stopped at its scan bound,
   * and its `endCursor` goes on from there.
   */
  shifts?: Maybe<ShiftConnection>;
};


/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type QueryLocationArgs = {
  id: Scalars['ID']['input'];
};


/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type QueryLocationsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  before?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};


/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type QueryNodeArgs = {
  nodeId: Scalars['ID']['input'];
};


/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type QueryShiftArgs = {
  id: Scalars['ID']['input'];
};


/** The entry points of the scheduling graph. Every field answers for the request's company (tenant) only. */
export type QueryShiftsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  before?: InputMaybe<Scalars['String']['input']>;
  filter?: InputMaybe<ShiftFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};

/** A scheduled stretch of work at one location. */
export type Shift = Node & {
  __typename?: 'Shift';
  /** When the shift ends (exclusive), with the location's UTC offset; null when the upstream has no end. */
  end?: Maybe<Scalars['DateTime']['output']>;
  /** The upstream's id of the shift (unique among the company's shifts only); the federation key. */
  id: Scalars['ID']['output'];
  /** The location of the shift; null when the upstream no longer lists it. */
  location?: Maybe<Location>;
  /** An opaque id, unique across all types of this API; pass it to `Query.node`. */
  nodeId: Scalars['ID']['output'];
  /** When the shift starts, with the location's UTC offset; null when the upstream has no start. */
  start?: Maybe<Scalars['DateTime']['output']>;
  /** The person working the shift, resolved by the subgraph that owns users; null for an open shift. */
  user?: Maybe<User>;
};

/** One change to the company's shifts. */
export type ShiftChange = {
  __typename?: 'ShiftChange';
  /** Whether the shift was added, updated or removed. */
  kind: ChangeKind;
  /** The shift's `nodeId` (the key Relay, Apollo Client and urql normalise by); present for a removed shift too. */
  nodeId: Scalars['ID']['output'];
  /** The shift as it is now; null when it was removed. */
  shift?: Maybe<Shift>;
};

/** A page of the company's shifts (a Relay connection). */
export type ShiftConnection = {
  __typename?: 'ShiftConnection';
  /** The shifts of this page with their cursors, in upstream order. */
  edges: Array<ShiftEdge>;
  /** The shifts of this page, in upstream order (the same as `edges[].node`). */
  nodes: Array<Shift>;
  /** Whether there are more shifts before or after this page, and the cursors to get them. */
  pageInfo: PageInfo;
};

/** One shift in a page, with its cursor. */
export type ShiftEdge = {
  __typename?: 'ShiftEdge';
  /** Opaque; pass it as `after` or `before` to resume right after or before this edge. */
  cursor: Scalars['String']['output'];
  /** The shift. */
  node: Shift;
};

/** Which shifts to list. Every field is optional; the ones given must all match. */
export type ShiftFilter = {
  /** Only shifts at this location. */
  locationId?: InputMaybe<Scalars['ID']['input']>;
  /** Only shifts starting before this instant (exclusive). */
  startsBefore?: InputMaybe<Scalars['DateTime']['input']>;
  /** Only shifts starting at or after this instant (inclusive). */
  startsFrom?: InputMaybe<Scalars['DateTime']['input']>;
};

/**
 * Live updates (graphql-ws at the GraphQL path, subprotocol `graphql-transport-ws`).
 * Each subscription delivers the changes seen after it starts, not what already exists:
 * query first, then subscribe. One upstream poll per company and list, whatever the filters,
 * serves every subscriber, every `WFS_POLL_INTERVAL_SECONDS` (jittered).
 */
export type Subscription = {
  __typename?: 'Subscription';
  /** Changes to the company's locations: added, updated or removed. */
  locationChanges: LocationChange;
  /**
   * Changes to the company's shifts: added, updated (any field) or removed, those
   * matching `filter` only (the same filter as `Query.shifts`; a shift that stops
   * matching is `REMOVED`, one that starts matching is `ADDED`). Needs the
   * `shifts.read` scope; a withdrawn scope ends the subscription with `FORBIDDEN`.
   */
  shiftChanges: ShiftChange;
};


/**
 * Live updates (graphql-ws at the GraphQL path, subprotocol `graphql-transport-ws`).
 * Each subscription delivers the changes seen after it starts, not what already exists:
 * query first, then subscribe. One upstream poll per company and list, whatever the filters,
 * serves every subscriber, every `WFS_POLL_INTERVAL_SECONDS` (jittered).
 */
export type SubscriptionShiftChangesArgs = {
  filter?: InputMaybe<ShiftFilter>;
};

/**
 * A person in the company. This subgraph knows only the id; another subgraph
 * (examples/people-subgraph) owns and resolves the rest.
 */
export type User = {
  __typename?: 'User';
  /** The person's id, shared with the subgraph that owns users. */
  id: Scalars['ID']['output'];
};

export type WithIndex<TObject> = TObject & Record<string, any>;
export type ResolversObject<TObject> = WithIndex<TObject>;

export type ResolverTypeWrapper<T> = Promise<T> | T;

export type ReferenceResolver<TResult, TReference, TContext> = (
      reference: TReference,
      context: TContext,
      info: GraphQLResolveInfo
    ) => Promise<TResult> | TResult;

      type ScalarCheck<T, S> = S extends true ? T : NullableCheck<T, S>;
      type NullableCheck<T, S> = Maybe<T> extends T ? Maybe<ListCheck<NonNullable<T>, S>> : ListCheck<T, S>;
      type ListCheck<T, S> = T extends (infer U)[] ? NullableCheck<U, S>[] : GraphQLRecursivePick<T, S>;
      export type GraphQLRecursivePick<T, S> = { [K in keyof T & keyof S]: ScalarCheck<T[K], S[K]> };
    

export type ResolverWithResolve<TResult, TParent, TContext, TArgs> = {
  resolve: ResolverFn<TResult, TParent, TContext, TArgs>;
};
export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs> | ResolverWithResolve<TResult, TParent, TContext, TArgs>;

export type ResolverFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => Promise<TResult> | TResult;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

/** Mapping of federation types */
export type FederationTypes = ResolversObject<{
  Location: Location;
  Shift: Shift;
}>;

/** Mapping of federation reference types */
export type FederationReferenceTypes = ResolversObject<{
  Location:
    ( { __typename: 'Location' }
    & GraphQLRecursivePick<FederationTypes['Location'], {"id":true}> );
  Shift:
    ( { __typename: 'Shift' }
    & GraphQLRecursivePick<FederationTypes['Shift'], {"id":true}> );
}>;


/** Mapping of interface types */
export type ResolversInterfaceTypes<_RefType extends Record<string, unknown>> = ResolversObject<{
  Node:
    | ( LocationRecord )
    | ( ShiftRecord )
  ;
}>;

/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = ResolversObject<{
  ChangeKind: ChangeKind;
  DateTime: ResolverTypeWrapper<Scalars['DateTime']['output']>;
  Location: ResolverTypeWrapper<LocationRecord>;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  LocationChange: ResolverTypeWrapper<Omit<LocationChange, 'location'> & { location?: Maybe<ResolversTypes['Location']> }>;
  LocationConnection: ResolverTypeWrapper<ConnectionPage<LocationRecord>>;
  LocationEdge: ResolverTypeWrapper<Edge<LocationRecord>>;
  Node: ResolverTypeWrapper<ResolversInterfaceTypes<ResolversTypes>['Node']>;
  PageInfo: ResolverTypeWrapper<PageInfo>;
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  Shift: ResolverTypeWrapper<ShiftRecord>;
  ShiftChange: ResolverTypeWrapper<Omit<ShiftChange, 'shift'> & { shift?: Maybe<ResolversTypes['Shift']> }>;
  ShiftConnection: ResolverTypeWrapper<ConnectionPage<ShiftRecord>>;
  ShiftEdge: ResolverTypeWrapper<Edge<ShiftRecord>>;
  ShiftFilter: ShiftFilter;
  Subscription: ResolverTypeWrapper<Record<PropertyKey, never>>;
  User: ResolverTypeWrapper<UserReference>;
}>;

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = ResolversObject<{
  DateTime: Scalars['DateTime']['output'];
  Location: LocationRecord;
  ID: Scalars['ID']['output'];
  String: Scalars['String']['output'];
  Int: Scalars['Int']['output'];
  LocationChange: Omit<LocationChange, 'location'> & { location?: Maybe<ResolversParentTypes['Location']> };
  LocationConnection: ConnectionPage<LocationRecord>;
  LocationEdge: Edge<LocationRecord>;
  Node: ResolversInterfaceTypes<ResolversParentTypes>['Node'];
  PageInfo: PageInfo;
  Boolean: Scalars['Boolean']['output'];
  Query: Record<PropertyKey, never>;
  Shift: ShiftRecord;
  ShiftChange: Omit<ShiftChange, 'shift'> & { shift?: Maybe<ResolversParentTypes['Shift']> };
  ShiftConnection: ConnectionPage<ShiftRecord>;
  ShiftEdge: Edge<ShiftRecord>;
  ShiftFilter: ShiftFilter;
  Subscription: Record<PropertyKey, never>;
  User: UserReference;
}>;

export interface DateTimeScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['DateTime'], any> {
  name: 'DateTime';
}

export type LocationResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Location'] = ResolversParentTypes['Location'], FederationReferenceType extends FederationReferenceTypes['Location'] = FederationReferenceTypes['Location']> = ResolversObject<{
  __resolveReference?: ReferenceResolver<Maybe<ResolversTypes['Location']> | FederationReferenceType, FederationReferenceType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  nodeId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  shifts?: Resolver<Maybe<ResolversTypes['ShiftConnection']>, ParentType, ContextType, Partial<LocationShiftsArgs>>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
}>;

export type LocationChangeResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['LocationChange'] = ResolversParentTypes['LocationChange']> = ResolversObject<{
  kind?: Resolver<ResolversTypes['ChangeKind'], ParentType, ContextType>;
  location?: Resolver<Maybe<ResolversTypes['Location']>, ParentType, ContextType>;
  nodeId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
}>;

export type LocationConnectionResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['LocationConnection'] = ResolversParentTypes['LocationConnection']> = ResolversObject<{
  edges?: Resolver<Array<ResolversTypes['LocationEdge']>, ParentType, ContextType>;
  nodes?: Resolver<Array<ResolversTypes['Location']>, ParentType, ContextType>;
  pageInfo?: Resolver<ResolversTypes['PageInfo'], ParentType, ContextType>;
}>;

export type LocationEdgeResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['LocationEdge'] = ResolversParentTypes['LocationEdge']> = ResolversObject<{
  cursor?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  node?: Resolver<ResolversTypes['Location'], ParentType, ContextType>;
}>;

export type NodeResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Node'] = ResolversParentTypes['Node']> = ResolversObject<{
  __resolveType: TypeResolveFn<'Location' | 'Shift', ParentType, ContextType>;
}>;

export type PageInfoResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['PageInfo'] = ResolversParentTypes['PageInfo']> = ResolversObject<{
  endCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  hasNextPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  hasPreviousPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  startCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
}>;

export type QueryResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = ResolversObject<{
  location?: Resolver<Maybe<ResolversTypes['Location']>, ParentType, ContextType, RequireFields<QueryLocationArgs, 'id'>>;
  locations?: Resolver<Maybe<ResolversTypes['LocationConnection']>, ParentType, ContextType, Partial<QueryLocationsArgs>>;
  node?: Resolver<Maybe<ResolversTypes['Node']>, ParentType, ContextType, RequireFields<QueryNodeArgs, 'nodeId'>>;
  shift?: Resolver<Maybe<ResolversTypes['Shift']>, ParentType, ContextType, RequireFields<QueryShiftArgs, 'id'>>;
  shifts?: Resolver<Maybe<ResolversTypes['ShiftConnection']>, ParentType, ContextType, Partial<QueryShiftsArgs>>;
}>;

export type ShiftResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Shift'] = ResolversParentTypes['Shift'], FederationReferenceType extends FederationReferenceTypes['Shift'] = FederationReferenceTypes['Shift']> = ResolversObject<{
  __resolveReference?: ReferenceResolver<Maybe<ResolversTypes['Shift']> | FederationReferenceType, FederationReferenceType, ContextType>;
  end?: Resolver<Maybe<ResolversTypes['DateTime']>, ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  location?: Resolver<Maybe<ResolversTypes['Location']>, ParentType, ContextType>;
  nodeId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  start?: Resolver<Maybe<ResolversTypes['DateTime']>, ParentType, ContextType>;
  user?: Resolver<Maybe<ResolversTypes['User']>, ParentType, ContextType>;
  __isTypeOf?: IsTypeOfResolverFn<ParentType, ContextType>;
}>;

export type ShiftChangeResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['ShiftChange'] = ResolversParentTypes['ShiftChange']> = ResolversObject<{
  kind?: Resolver<ResolversTypes['ChangeKind'], ParentType, ContextType>;
  nodeId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  shift?: Resolver<Maybe<ResolversTypes['Shift']>, ParentType, ContextType>;
}>;

export type ShiftConnectionResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['ShiftConnection'] = ResolversParentTypes['ShiftConnection']> = ResolversObject<{
  edges?: Resolver<Array<ResolversTypes['ShiftEdge']>, ParentType, ContextType>;
  nodes?: Resolver<Array<ResolversTypes['Shift']>, ParentType, ContextType>;
  pageInfo?: Resolver<ResolversTypes['PageInfo'], ParentType, ContextType>;
}>;

export type ShiftEdgeResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['ShiftEdge'] = ResolversParentTypes['ShiftEdge']> = ResolversObject<{
  cursor?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  node?: Resolver<ResolversTypes['Shift'], ParentType, ContextType>;
}>;

export type SubscriptionResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Subscription'] = ResolversParentTypes['Subscription']> = ResolversObject<{
  locationChanges?: SubscriptionResolver<ResolversTypes['LocationChange'], "locationChanges", ParentType, ContextType>;
  shiftChanges?: SubscriptionResolver<ResolversTypes['ShiftChange'], "shiftChanges", ParentType, ContextType, Partial<SubscriptionShiftChangesArgs>>;
}>;

export type UserResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['User'] = ResolversParentTypes['User']> = ResolversObject<{
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
}>;

export type Resolvers<ContextType = GraphQLContext> = ResolversObject<{
  DateTime?: GraphQLScalarType;
  Location?: LocationResolvers<ContextType>;
  LocationChange?: LocationChangeResolvers<ContextType>;
  LocationConnection?: LocationConnectionResolvers<ContextType>;
  LocationEdge?: LocationEdgeResolvers<ContextType>;
  Node?: NodeResolvers<ContextType>;
  PageInfo?: PageInfoResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  Shift?: ShiftResolvers<ContextType>;
  ShiftChange?: ShiftChangeResolvers<ContextType>;
  ShiftConnection?: ShiftConnectionResolvers<ContextType>;
  ShiftEdge?: ShiftEdgeResolvers<ContextType>;
  Subscription?: SubscriptionResolvers<ContextType>;
  User?: UserResolvers<ContextType>;
}>;

