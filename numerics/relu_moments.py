"""Gaussian moments of single ReLU units, by quadrature (mpmath, at the caller's precision).

For unit vectors u, v and x ~ N(0, I): E relu(u.x)^2 = int_0^oo z^2 phi(z) dz, and for u . v = 0 the two
projections are independent standard normals, so E relu(u.x) relu(v.x) = (int_0^oo z phi(z) dz)^2.  The
integrals are taken by ``mp.quad``, not from the arc-cosine closed forms (1/2 and 1/(2 pi)).
"""

from __future__ import annotations

import mpmath as mp

__all__ = ["orthogonal_relu_gram_entries"]


def orthogonal_relu_gram_entries():
    """(E relu(u.x) relu(v.x) for orthogonal unit u, v;  E relu(u.x)^2 for a unit u), x ~ N(0, I), by quadrature:
    the off-diagonal and diagonal entries of the Gaussian Gram matrix of orthonormal ReLU units."""
    phi = lambda z: mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)
    first = mp.quad(lambda z: z * phi(z), [0, mp.inf])
    second = mp.quad(lambda z: z * z * phi(z), [0, mp.inf])
    return first**2, second
