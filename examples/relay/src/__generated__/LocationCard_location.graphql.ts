/**
 * @generated SignedSource<<1ed275607d593d127d3461240ca05409>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ReaderFragment } from 'relay-runtime';
import { FragmentRefs } from "relay-runtime";
export type LocationCard_location$data = {
  readonly id: string;
  readonly name: string;
  readonly nodeId: string;
  readonly " $fragmentType": "LocationCard_location";
};
export type LocationCard_location$key = {
  readonly " $data"?: LocationCard_location$data;
  readonly " $fragmentSpreads": FragmentRefs<"LocationCard_location">;
};

import LocationCardRefetchQuery_graphql from './LocationCardRefetchQuery.graphql';

const node: ReaderFragment = {
  "argumentDefinitions": [],
  "kind": "Fragment",
  "metadata": {
    "refetch": {
      "connection": null,
      "fragmentPathInResult": [
        "node"
      ],
      "operation": LocationCardRefetchQuery_graphql,
      "identifierInfo": {
        "identifierField": "nodeId",
        "identifierQueryVariableName": "nodeId"
      }
    }
  },
  "name": "LocationCard_location",
  "selections": [
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "id",
      "storageKey": null
    },
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "name",
      "storageKey": null
    },
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "nodeId",
      "storageKey": null
    }
  ],
  "type": "Location",
  "abstractKey": null
};

(node as any).hash = "b5419f3b74bc5d232c4b744389a2f2cc";

export default node;
