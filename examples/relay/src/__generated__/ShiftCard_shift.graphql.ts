/**
 * @generated SignedSource<<7f6a6000e3b6007baf46732923e5477f>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ReaderFragment } from 'relay-runtime';
import { FragmentRefs } from "relay-runtime";
export type ShiftCard_shift$data = {
  readonly end: string | null | undefined;
  readonly id: string;
  readonly location: {
    readonly id: string;
    readonly name: string;
  } | null | undefined;
  readonly nodeId: string;
  readonly start: string | null | undefined;
  readonly " $fragmentType": "ShiftCard_shift";
};
export type ShiftCard_shift$key = {
  readonly " $data"?: ShiftCard_shift$data;
  readonly " $fragmentSpreads": FragmentRefs<"ShiftCard_shift">;
};

import ShiftCardRefetchQuery_graphql from './ShiftCardRefetchQuery.graphql';

const node: ReaderFragment = (function(){
var v0 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
};
return {
  "argumentDefinitions": [],
  "kind": "Fragment",
  "metadata": {
    "refetch": {
      "connection": null,
      "fragmentPathInResult": [
        "node"
      ],
      "operation": ShiftCardRefetchQuery_graphql,
      "identifierInfo": {
        "identifierField": "nodeId",
        "identifierQueryVariableName": "nodeId"
      }
    }
  },
  "name": "ShiftCard_shift",
  "selections": [
    (v0/*:: as any*/),
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "start",
      "storageKey": null
    },
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "end",
      "storageKey": null
    },
    {
      "alias": null,
      "args": null,
      "concreteType": "Location",
      "kind": "LinkedField",
      "name": "location",
      "plural": false,
      "selections": [
        (v0/*:: as any*/),
        {
          "alias": null,
          "args": null,
          "kind": "ScalarField",
          "name": "name",
          "storageKey": null
        }
      ],
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
  "type": "Shift",
  "abstractKey": null
};
})();

(node as any).hash = "d510c0b13474a9e078cfc5ceccb8e259";

export default node;
