/**
 * @generated SignedSource<<07e31bb3c39113504b22da9f062d3089>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
import { FragmentRefs } from "relay-runtime";
export type ChangeKind = "ADDED" | "REMOVED" | "UPDATED";
export type ShiftChangesSubscription$variables = Record<PropertyKey, never>;
export type ShiftChangesSubscription$data = {
  readonly shiftChanges: {
    readonly kind: ChangeKind;
    readonly nodeId: string;
    readonly shift: {
      readonly nodeId: string;
      readonly " $fragmentSpreads": FragmentRefs<"ShiftCard_shift">;
    } | null | undefined;
  };
};
export type ShiftChangesSubscription = {
  response: ShiftChangesSubscription$data;
  variables: ShiftChangesSubscription$variables;
};

const node: ConcreteRequest = (function(){
var v0 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "kind",
  "storageKey": null
},
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "nodeId",
  "storageKey": null
},
v2 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
};
return {
  "fragment": {
    "argumentDefinitions": [],
    "kind": "Fragment",
    "metadata": null,
    "name": "ShiftChangesSubscription",
    "selections": [
      {
        "alias": null,
        "args": null,
        "concreteType": "ShiftChange",
        "kind": "LinkedField",
        "name": "shiftChanges",
        "plural": false,
        "selections": [
          (v0/*:: as any*/),
          (v1/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "concreteType": "Shift",
            "kind": "LinkedField",
            "name": "shift",
            "plural": false,
            "selections": [
              (v1/*:: as any*/),
              {
                "args": null,
                "kind": "FragmentSpread",
                "name": "ShiftCard_shift"
              }
            ],
            "storageKey": null
          }
        ],
        "storageKey": null
      }
    ],
    "type": "Subscription",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": [],
    "kind": "Operation",
    "name": "ShiftChangesSubscription",
    "selections": [
      {
        "alias": null,
        "args": null,
        "concreteType": "ShiftChange",
        "kind": "LinkedField",
        "name": "shiftChanges",
        "plural": false,
        "selections": [
          (v0/*:: as any*/),
          (v1/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "concreteType": "Shift",
            "kind": "LinkedField",
            "name": "shift",
            "plural": false,
            "selections": [
              (v1/*:: as any*/),
              (v2/*:: as any*/),
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
                  (v2/*:: as any*/),
                  {
                    "alias": null,
                    "args": null,
                    "kind": "ScalarField",
                    "name": "name",
                    "storageKey": null
                  },
                  (v1/*:: as any*/)
                ],
                "storageKey": null
              }
            ],
            "storageKey": null
          }
        ],
        "storageKey": null
      }
    ]
  },
  "params": {
    "cacheID": "490635fe7b11efbe3558d424722abbca",
    "id": null,
    "metadata": {},
    "name": "ShiftChangesSubscription",
    "operationKind": "subscription",
    "text": "subscription ShiftChangesSubscription {\n  shiftChanges {\n    kind\n    nodeId\n    shift {\n      nodeId\n      ...ShiftCard_shift\n    }\n  }\n}\n\nfragment ShiftCard_shift on Shift {\n  id\n  start\n  end\n  location {\n    id\n    name\n    nodeId\n  }\n  nodeId\n}\n"
  }
};
})();

(node as any).hash = "ec80d78004f6a10f642bbe71ce360921";

export default node;
