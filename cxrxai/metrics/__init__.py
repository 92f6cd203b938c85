"""Pure metric functions (arrays in, numbers out): classification now; localization, geometry,
trust, fidelity and fairness as the papers define them."""
