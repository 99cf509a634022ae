/**
 * @generated SignedSource<<b17b6950bbaf05eb47a3ead874aa37d6>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ReaderFragment } from 'relay-runtime';
import { FragmentRefs } from "relay-runtime";
export type LocationShifts_location$data = {
  readonly name: string;
  readonly nodeId: string;
  readonly shifts: {
    readonly edges: ReadonlyArray<{
      readonly node: {
        readonly nodeId: string;
        readonly " $fragmentSpreads": FragmentRefs<"ShiftCard_shift">;
      };
    }>;
  } | null | undefined;
  readonly " $fragmentType": "LocationShifts_location";
};
export type LocationShifts_location$key = {
  readonly " $data"?: LocationShifts_location$data;
  readonly " $fragmentSpreads": FragmentRefs<"LocationShifts_location">;
};

import LocationShiftsPaginationQuery_graphql from './LocationShiftsPaginationQuery.graphql';

const node: ReaderFragment = (function(){
var v0 = [
  "shifts"
],
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "nodeId",
  "storageKey": null
};
return {
  "argumentDefinitions": [
    {
      "defaultValue": 20,
      "kind": "LocalArgument",
      "name": "count"
    },
    {
      "defaultValue": null,
      "kind": "LocalArgument",
      "name": "cursor"
    },
    {
      "defaultValue": null,
      "kind": "LocalArgument",
      "name": "startsBefore"
    },
    {
      "defaultValue": null,
      "kind": "LocalArgument",
      "name": "startsFrom"
    }
  ],
  "kind": "Fragment",
  "metadata": {
    "connection": [
      {
        "count": "count",
        "cursor": "cursor",
        "direction": "forward",
        "path": (v0/*:: as any*/)
      }
    ],
    "refetch": {
      "connection": {
        "forward": {
          "count": "count",
          "cursor": "cursor"
        },
        "backward": null,
        "path": (v0/*:: as any*/)
      },
      "fragmentPathInResult": [
        "node"
      ],
      "operation": LocationShiftsPaginationQuery_graphql,
      "identifierInfo": {
        "identifierField": "nodeId",
        "identifierQueryVariableName": "nodeId"
      }
    }
  },
  "name": "LocationShifts_location",
  "selections": [
    {
      "alias": null,
      "args": null,
      "kind": "ScalarField",
      "name": "name",
      "storageKey": null
    },
    {
      "alias": "shifts",
      "args": [
        {
          "kind": "Variable",
          "name": "startsBefore",
          "variableName": "startsBefore"
        },
        {
          "kind": "Variable",
          "name": "startsFrom",
          "variableName": "startsFrom"
        }
      ],
      "concreteType": "ShiftConnection",
      "kind": "LinkedField",
      "name": "__LocationShifts_shifts_connection",
      "plural": false,
      "selections": [
        {
          "alias": null,
          "args": null,
          "concreteType": "ShiftEdge",
          "kind": "LinkedField",
          "name": "edges",
          "plural": true,
          "selections": [
            {
              "alias": null,
              "args": null,
              "concreteType": "Shift",
              "kind": "LinkedField",
              "name": "node",
              "plural": false,
              "selections": [
                (v1/*:: as any*/),
                {
                  "args": null,
                  "kind": "FragmentSpread",
                  "name": "ShiftCard_shift"
                },
                {
                  "alias": null,
                  "args": null,
                  "kind": "ScalarField",
                  "name": "__typename",
                  "storageKey": null
                }
              ],
              "storageKey": null
            },
            {
              "alias": null,
              "args": null,
              "kind": "ScalarField",
              "name": "cursor",
              "storageKey": null
            }
          ],
          "storageKey": null
        },
        {
          "alias": null,
          "args": null,
          "concreteType": "PageInfo",
          "kind": "LinkedField",
          "name": "pageInfo",
          "plural": false,
          "selections": [
            {
              "alias": null,
              "args": null,
              "kind": "ScalarField",
              "name": "endCursor",
              "storageKey": null
            },
            {
              "alias": null,
              "args": null,
              "kind": "ScalarField",
              "name": "hasNextPage",
              "storageKey": null
            }
          ],
          "storageKey": null
        }
      ],
      "storageKey": null
    },
    (v1/*:: as any*/)
  ],
  "type": "Location",
  "abstractKey": null
};
})();

(node as any).hash = "a3a1f40ab281be5fdeb38f4b1ea3c3d0";

export default node;
