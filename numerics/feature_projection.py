"""How much of a teacher ReLU layer lies outside the span of a student's ReLU features, in mpmath.

f*(x) = (1/m*) sum_j c*_j relu(w*_j.x) and the features relu(w_i.x), x ~ N(0, I_d): the squared L2 norm
of f* minus that of its projection onto the features, each inner product <relu(a.x), relu(b.x)> taken from
a kernel of the units' cosine (passed in: the claim's closed form, itself checked against quadrature), and
the projection through the Mercer eigenfunctions of the student's Gram matrix
(``numerics.kernels.projection_by_eigenfunctions``), not through K^{-1}.
"""

from __future__ import annotations

import mpmath as mp

from numerics.kernels import projection_by_eigenfunctions

__all__ = ["unit_rows", "cosine_gram", "norm_outside_span"]


def unit_rows(rows):
    """Rows (sequences of floats) as mpmath unit vectors, normalised at the working precision."""
    vectors = [[mp.mpf(x) for x in row] for row in rows]
    return [[x / mp.sqrt(mp.fsum(y * y for y in v)) for x in v] for v in vectors]


def cosine_gram(kernel, A, B):
    """The matrix kernel(a.b) over unit vectors a in A, b in B, the cosine clamped to [-1, 1]."""
    cosine = lambda a, b: max(mp.mpf(-1), min(mp.mpf(1), mp.fdot(a, b)))
    return mp.matrix([[kernel(cosine(a, b)) for b in B] for a in A])


def norm_outside_span(kernel, student_rows, teacher_rows, readout):
    """||P_perp f*||^2 = ||f*||^2 - ||P f*||^2 for f* = (1/m*) sum_j readout_j relu(w*_j.x) and P the L2
    projector onto span{relu(w_i.x)}: unit rows of ``student_rows`` (m) and ``teacher_rows`` (m*), the
    unit-unit inner products given by ``kernel`` of their cosine.  Needs the student's Gram matrix
    positive definite."""
    student, teacher = unit_rows(student_rows), unit_rows(teacher_rows)
    m_star = len(teacher)
    coefficients = [mp.mpf(c) / m_star for c in readout]                   # f* = sum_j (c*_j / m*) relu*_j
    teacher_gram = cosine_gram(kernel, teacher, teacher)
    norm = mp.fsum(coefficients[i] * teacher_gram[i, j] * coefficients[j] for i in range(m_star) for j in range(m_star))
    return norm - projection_by_eigenfunctions(cosine_gram(kernel, student, student),
                                               cosine_gram(kernel, student, teacher), coefficients)
