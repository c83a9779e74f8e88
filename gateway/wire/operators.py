"""The operators' RPCs of the servicer: quota usage and resets, tools' pins and approvals.
Each asks its desk (`QuotaDesk`, `PinDesk`), which asks the policy's grant."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from gateway import pb
from gateway.model import Identity
from gateway.run.pin_desk import PinDesk
from gateway.run.quota_desk import QuotaDesk
from gateway.wire import convert

T = TypeVar("T")


class OperatorRpcs:
    quotas: QuotaDesk
    pins: PinDesk

    async def _call(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], Awaitable[T]],
        request: Any = None,
    ) -> T:
        raise NotImplementedError  # the servicer's: authenticate, answer, map errors

    async def ListQuotas(
        self, request: pb.ListQuotasRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListQuotasResponse:
        async def go(who: Identity) -> pb.ListQuotasResponse:
            return convert.quotas_to(
                await self.quotas.list_page(
                    who, request.prefix, page_size=request.page_size, page_token=request.page_token
                )
            )

        return await self._call("ListQuotas", context, go, request)

    async def ResetQuota(
        self, request: pb.ResetQuotaRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ResetQuotaResponse:
        async def go(who: Identity) -> pb.ResetQuotaResponse:
            removed = await self.quotas.reset(who, request.key, request.reason)
            return pb.ResetQuotaResponse(key=request.key, removed=removed)

        return await self._call("ResetQuota", context, go, request)

    async def ListToolPins(
        self, request: pb.ListToolPinsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListToolPinsResponse:
        async def go(who: Identity) -> pb.ListToolPinsResponse:
            views = await self.pins.list(who, list(request.names))
            return pb.ListToolPinsResponse(pins=[convert.pin_to(v.pin, v.changed) for v in views])

        return await self._call("ListToolPins", context, go, request)

    async def ApproveToolPin(
        self, request: pb.ApproveToolPinRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ApproveToolPinResponse:
        async def go(who: Identity) -> pb.ApproveToolPinResponse:
            pin, previous = await self.pins.approve(
                who, request.name, request.fingerprint, request.reason
            )
            return pb.ApproveToolPinResponse(
                pin=convert.pin_to(pin, ()), previous_fingerprint=previous
            )

        return await self._call("ApproveToolPin", context, go, request)
