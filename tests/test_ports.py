"""The tests' loopback ports: a held refusing port refuses and cannot be taken."""

from __future__ import annotations

import errno
import socket

import pytest

from tests.ports import free_port, refusing_port


def test_a_refusing_port_refuses_connections_while_held() -> None:
    with refusing_port() as port, pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_no_other_socket_can_take_a_refusing_port_while_it_is_held() -> None:
    with refusing_port() as port, socket.socket() as other:
        with pytest.raises(OSError) as taken:
            other.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE


def test_a_free_port_can_be_bound_by_the_program_it_is_given_to() -> None:
    port = free_port()
    with socket.socket() as program:
        program.bind(("127.0.0.1", port))
        assert program.getsockname()[1] == port
